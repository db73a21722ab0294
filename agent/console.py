"""What `cra` and `cra-bot` share at their edge: version, global options, logging, exit paths."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from agent.errors import Interrupted

DISTRIBUTION = "clean-room-agent"
EXIT_OK = 0
EXIT_FAILED, EXIT_USAGE, EXIT_BROKEN_PIPE = 1, 2, 141  # 141: 128 + SIGPIPE, as a shell reports
OUR_LOGGERS = ("agent", "bot", "cra", "cra-bot")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def version() -> str:
    """The installed version of cra, or "unknown" when run from a bare source tree."""
    from importlib import metadata  # a scan of the installed distributions: only when asked

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def global_options(*, env_file: bool = False) -> argparse.ArgumentParser:
    """A parent parser of the options both programs take before or after the subcommand.

    Subcommands get copies whose defaults are SUPPRESS, so that a value given before the
    subcommand is not reset by the subcommand's parser.
    """
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the libraries' log lines too (migrations, HTTP requests)",
    )
    parent.add_argument(
        "--debug",
        action="store_true",
        help="log everything and show the traceback of an unexpected error",
    )
    if env_file:
        parent.add_argument("--env-file", type=Path, help="a .env file beneath the environment")
    return parent


def suppressed(parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A copy of `parent` whose options default to SUPPRESS (for use under a subcommand)."""
    copy = argparse.ArgumentParser(add_help=False)
    for action in parent._actions:
        kwargs: dict[str, object] = {
            "dest": action.dest,
            "default": argparse.SUPPRESS,
            "help": action.help,
        }
        if action.nargs == 0:
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = action.metavar
            if action.type is not None:
                kwargs["type"] = action.type
        copy.add_argument(*action.option_strings, **kwargs)  # type: ignore[arg-type]
    return copy


def add_version(parser: argparse.ArgumentParser, program: str) -> None:
    """`--version`: the program's name and the installed version (looked up when asked)."""
    parser.add_argument("--version", action=_Version, program=program)


class _Version(argparse.Action):
    """argparse's version action, but the version is read only when `--version` is given."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        *,
        program: str,
        help: str = "show program's version number and exit",
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)
        self.program = program

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"{self.program} {version()}")
        parser.exit()


def configure_logging(*, verbose: bool, debug: bool, ours: int = logging.INFO) -> None:
    """Our loggers at `ours`; libraries (Alembic, httpx, RQ …) at WARNING unless -v or --debug.

    Only in a process whose logging nobody configured yet: embedded (a test, another program),
    the logging is theirs.
    """
    if logging.getLogger().handlers:
        return
    root = logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=root, format=LOG_FORMAT)
    for name in OUR_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else min(ours, root))


def run_main(program: str, body: Callable[[], int], *, debug: bool) -> int:
    """Run a CLI body: a closed pipe ends quietly, an unexpected error is one line (no traceback
    unless --debug), Ctrl-C is exit 130."""
    try:
        code = body()
        sys.stdout.flush()  # a closed pipe shows here, inside the guard, not at exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{program}: interrupted", file=sys.stderr)
        return 130
    except Interrupted as exc:  # a signal before a run existed, or after it was recorded
        print(f"{program}: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # the boundary: a bug or an unforeseen failure, said in one line
        if debug:
            traceback.print_exc()
        else:
            print(
                f"{program}: unexpected error: {type(exc).__name__}: {exc}\n"
                f"{program}: run again with --debug to see where it happened",
                file=sys.stderr,
            )
        return EXIT_FAILED


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush finds no closed pipe."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = 0.7) -> str | None:
    """The choice closest to `word` when one is close enough (a typo), else None."""
    found = difflib.get_close_matches(
        word.lower(), [c.lower() for c in choices], n=1, cutoff=cutoff
    )
    if not found:
        return None
    return next(c for c in choices if c.lower() == found[0])


def unknown_variables(
    environ: Mapping[str, str],
    known: Sequence[str],
    *,
    prefix: str = "CRA_",
    near_misses_only: bool = False,
    ignore: Sequence[str] = (),
) -> list[tuple[str, str | None]]:
    """(name, nearest known name or None) of each `prefix` variable that nothing reads.

    `ignore` holds prefixes of variables read by other tools (tests, the demo, workflows).
    With `near_misses_only`, only names close to a known one count (another program may read
    the rest).
    """
    found = []
    for name in sorted(environ):
        if not name.startswith(prefix) or name in known or name.startswith(tuple(ignore)):
            continue
        nearest = did_you_mean(name, known)
        if nearest is not None or not near_misses_only:
            found.append((name, nearest))
    return found


def describe_unknown(program: str, name: str, nearest: str | None) -> str:
    """One line about a variable nothing reads."""
    hint = f"; did you mean {nearest}?" if nearest else ""
    return f"{program} reads no setting {name}{hint}"


def shown_url(url: str) -> str:
    """A database or Redis URL without its password, fit for a message."""
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url.split("://", 1)[0] + "://…" if "://" in url else "(not a URL)"
