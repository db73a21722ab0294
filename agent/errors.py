"""The AgentError tree: every failure the agent raises on purpose, carrying its data.

    AgentError
    ├── ConfigError            a configuration file or value (path, key)
    ├── UsageError             the command line or a file it names: exit 2
    ├── PreflightFailed        a run that cannot work, found before anything was spent
    ├── SandboxUnavailable     the configured sandbox cannot run here
    ├── LLMError               a model call failed for good (status, retryable)
    ├── PromptTooLarge         a prompt over the model's window (tokens, limit, stage)
    ├── BudgetExhausted        a token or call ceiling crossed (budget, used, limit)
    ├── ParseError             a model answer that does not parse (raw)         + ValueError
    ├── PlanInvalid            a plan's ids, dependencies or cycles (problems)  + ValueError
    ├── AdjustmentFailed       a decomposed adjustment (stage, keys)            + ValueError
    ├── PatchRejected          an edit that cannot be applied (path, hint)
    │   └── UnsafePath         … outside the tree, into .git, through a symlink
    ├── GitError               a git command (argv, returncode, stderr)
    ├── CredentialsInUrl       a remote URL with credentials in it              + ValueError
    ├── CommandNotStarted      a test, lint or type-check command that could not start
    ├── SetupFailed            a run's setup step (result, report, failure)
    ├── UnsafeCopy             a copy into a checkout through its symlink (path)
    ├── ConnectionLost         a kept database connection broke
    └── BenchError             a bench's input or step (`cra bench …`)
        ├── TaskFileError      a task file, with the line that is wrong
        ├── ReportFileError    a results file that cannot be read              + ValueError
        ├── PartsError         a split or merge that cannot be done as asked
        ├── SetupError         the repository's setup step failed at a commit (failure)
        ├── MixedSettings      a results file of the other tests setting
        ├── JournalMismatch    a mine's journal left with other settings
        └── BaselineError      a --baseline that cannot be read or compared     + ValueError
            └── SettingsMismatch  … a row compared across tests settings unasked

Interrupted (SIGINT, SIGTERM) is a BaseException, outside the tree, so that no broad handler
swallows it.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.models import CommandResult, EnvironmentReport, SetupFailure


class AgentError(Exception):
    """Base of every error the agent raises on purpose."""


class ConfigError(AgentError):
    """A configuration file or value is wrong; names the file and key when known."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{message}")
        self.path = path
        self.key = key


class LLMError(AgentError):
    """A model call failed for good (after retries, or on a non-retryable answer)."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class PromptTooLarge(AgentError):
    """The assembled prompt does not fit the model window minus the reserved tokens (R3)."""

    def __init__(self, *, tokens: int, limit: int, stage: str = "") -> None:
        label = f" for stage {stage!r}" if stage else ""
        super().__init__(f"prompt{label} needs ~{tokens} tokens but only {limit} fit the window")
        self.tokens = tokens
        self.limit = limit
        self.stage = stage


class BudgetExhausted(AgentError):
    """A token or call ceiling was crossed; `budget` names which one."""

    def __init__(self, budget: str, *, used: int, limit: int) -> None:
        super().__init__(f"budget {budget!r} exhausted: used {used} of {limit}")
        self.budget = budget
        self.used = used
        self.limit = limit


class ParseError(AgentError, ValueError):
    """A model answer could not be parsed; `raw` holds the text that failed."""

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class PlanInvalid(AgentError, ValueError):
    """A plan failed validation (ids, dependencies, cycles, emptiness)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid plan: " + "; ".join(problems))
        self.problems = problems


class AdjustmentFailed(AgentError, ValueError):
    """A decomposed adjustment could not proceed; `stage` and `keys` name where and what."""

    def __init__(self, message: str, *, stage: str, keys: list[str]) -> None:
        super().__init__(message)
        self.stage = stage
        self.keys = keys


class PatchRejected(AgentError):
    """An edit could not be applied; `hint` holds the closest region for a retry prompt."""

    def __init__(self, reason: str, *, path: str = "", hint: str = "") -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.reason = reason
        self.path = path
        self.hint = hint


class UnsafePath(PatchRejected):
    """An edit points outside the tree, into .git, through a symlink, or at a protected path."""


class GitError(AgentError):
    """A git command failed; carries the argv and git's stderr."""

    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(argv)} failed ({returncode}): {stderr.strip()}")
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr

    @property
    def summary(self) -> str:
        """What failed in git's own words, for people who did not run it: the subcommand and
        git's last `fatal:`/`error:` lines (hints and the paths of the argv left out)."""
        said = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        key = [line for line in said if line.startswith(("fatal:", "error:"))] or [
            line for line in said if not line.startswith("hint:")
        ]
        reason = " ".join(key[-2:]) if key else f"exit status {self.returncode}"
        return (
            f"git {self.subcommand} failed: {reason}"
            if self.subcommand
            else (f"git failed: {reason}")
        )

    @property
    def subcommand(self) -> str:
        """The git command that failed (`clone`, `push`…), past the global options."""
        valued = False
        for arg in self.argv:
            if valued:
                valued = False
            elif arg in ("-c", "-C"):
                valued = True
            elif not arg.startswith("-"):
                return arg
        return ""


class CredentialsInUrl(AgentError, ValueError):
    """A remote URL carries credentials; they belong in the environment. `url` is redacted."""

    def __init__(self, url: str) -> None:
        super().__init__(
            f"refusing a remote URL with credentials in it ({url}): pass the token through "
            "the environment (GIT_ASKPASS), never in the URL"
        )
        self.url = url


class CommandNotStarted(AgentError):
    """A test, lint or type-check command could not be started at all (no such command, no
    working directory, none configured)."""


class ConnectionLost(AgentError):
    """A kept database connection broke. Inside a transaction, which therefore did not commit,
    the work may be tried once more (a fresh connection is opened); a statement that commits
    by itself (Database.raw_statement) may have landed, and a retry must find out first."""


class PreflightFailed(AgentError):
    """A run cannot work and nothing was spent yet: the message says what and how to fix it."""


class SandboxUnavailable(AgentError):
    """The configured sandbox cannot run here; the message says how to fix or opt out."""


class UsageError(AgentError):
    """The command line, a setting or a file named by either is wrong: exit 2, one message."""


class UnsafeCopy(AgentError):
    """A copy into a checkout would write through a symlink of the checkout's (outside it)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} in the checkout is a symlink where the copy would write")
        self.path = path


class BenchError(AgentError):
    """A bench's input or step that cannot be used as asked (`cra bench …`)."""


class TaskFileError(BenchError):
    """A task file that cannot be read, with the line that is wrong."""


class ReportFileError(BenchError, ValueError):
    """The results file cannot be read."""


class PartsError(BenchError):
    """A split or merge that cannot be done as asked (a part count, a file that is missing)."""


class SetupError(BenchError):
    """The repository's setup step failed at a commit: it cannot be tested here; `failure`
    holds the command, how it ended and its output's last lines. `first`: the commit whose
    replay ran this same setup (the same dependency files) earlier in the mine and met the
    failure, when it was not run again for this one."""

    def __init__(self, failure: SetupFailure, *, first: str | None = None) -> None:
        super().__init__(failure.explained())
        self.failure = failure
        self.first = first


class MixedSettings(BenchError):
    """A results file that holds results run in the other tests setting."""

    def __init__(self, results: Path, asked: str, found: Set[str]) -> None:
        other = ", ".join(sorted(found))
        super().__init__(
            f"{results} holds results run with the tests {other}; this bench runs "
            f"them {asked}: give another --results file (or --tests {other})"
        )
        self.results, self.asked, self.found = results, asked, found


class JournalMismatch(BenchError):
    """A journal left by a mine with other settings: resuming it would mix two mines."""

    def __init__(self, path: Path, differ: list[str]) -> None:
        super().__init__(
            f"{path} was left by an interrupted mine with other settings ({', '.join(differ)} "
            "differ): run with the same ones to resume it, or delete it to start afresh"
        )
        self.path = path
        self.differ = differ


class BaselineError(BenchError, ValueError):
    """A --baseline file that is neither a results file nor a report, or cannot be compared."""


class SettingsMismatch(BaselineError):
    """A row whose baseline counterpart ran in another setting, compared without being asked;
    `crossed` holds (model, this setting, the baseline's setting) for each such row."""

    def __init__(self, source: str, crossed: Sequence[tuple[str, str, str]]):
        self.source, self.crossed = source, list(crossed)
        model, now, then = self.crossed[0]
        more = f" (and {len(self.crossed) - 1} more)" if len(self.crossed) > 1 else ""
        super().__init__(
            f"the baseline {source} ran {model} with the fix's tests {then}, these results with "
            f"them {now}{more}: a rate measured with the tests given is not one measured with "
            "them hidden (--across-settings compares them anyway)"
        )


class Interrupted(BaseException):
    """SIGINT or SIGTERM reached `cra` during a run: a BaseException, like KeyboardInterrupt, so
    that no `except Exception` on the way swallows it; the run ends cancelled."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(f"interrupted by {self.name}")

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


# --- a run's control-flow signals, and its setup failure ------------------------------------
#
# RunSignal is not an AgentError: a broad `except AgentError` (a pass that failed) never catches
# one, so no handler has to re-raise it first; only the run's sequencer (agent.run.orchestrator)
# catches them, and ends the run the way each one says.


class RunSignal(Exception):
    """Base of the signals that steer an orchestrator run rather than report a failure: the run
    was cancelled (Cancelled), or its budget ran out (StopRun)."""


class Cancelled(RunSignal):
    """The run was cancelled between passes."""


class StopRun(RunSignal):
    """The run budget ran out: stop, keeping what was committed."""

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget


class SetupFailed(AgentError):
    """The setup step failed: the repository's environment could not be built."""

    def __init__(self, result: CommandResult, report: EnvironmentReport) -> None:
        failure = report.failure
        if failure is None:
            state = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            message = f"the setup step ({result.command}) {state}; see its output"
        else:
            last = failure.last_line()
            message = failure.headline() + (f": {last}" if last else ", printing nothing")
        super().__init__(message)
        self.result, self.report, self.failure = result, report, failure
