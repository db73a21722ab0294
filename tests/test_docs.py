"""The README and the pages of docs/ stay true: their tables equal the code's settings, their
commands exist.

The environment table is rendered from `bot.environment.environment_variables()`; print the
expected tables with `.venv/bin/python -m tests.test_docs` and paste them between the markers, on
whichever page holds them (docs/configuration.md).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent.cli.main import build_parser as cra_parser
from agent.config.files import SolveConfig
from bot.cli.main import build_parser as cra_bot_parser
from bot.cli.register import _parser as register_parser
from bot.environment import environment_variables
from bot.settings import BotSettings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ENV_MARKERS = ("<!-- BEGIN env-table", "<!-- END env-table -->")
TOML_MARKERS = ("<!-- BEGIN cra-toml-table", "<!-- END cra-toml-table -->")
SHELL_LANGS = {"sh", "bash", "shell", "console", ""}
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
OPERATORS = {"&&", "||", ";", "|", "&", "(", ")"}
ROLE = "<role>"


# --- rendering the expected tables --------------------------------------------------------------


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: pipes escaped, no raw HTML tags."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def env_default(value: Any) -> str:
    """A BotSettings default as the table shows it: blank when there is none."""
    if value is None or value == []:
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def render_env_table() -> str:
    """The environment-variable table, one row per variable BotSettings reads."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for variable in environment_variables():
        default = env_default(variable.default)
        rows.append(f"| `{variable.name}` | {default} | {cell(variable.description)} |")
    return "\n".join(rows)


def toml_value(value: Any) -> str:
    """A SolveConfig default written as TOML."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return repr(value)


def toml_default(value: Any) -> str:
    """A SolveConfig default as the cra.toml table's cell shows it."""
    return "(unset)" if value is None else f"`{toml_value(value)}`"


def config_keys(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf key of a config model (`section.key`, `models.role.key`) with its default."""
    for name in type(model).model_fields:
        if not prefix and name == "source":  # set by the loader, not a key of the file
            continue
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from config_keys(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def actual_config_keys() -> dict[str, str]:
    """Key path → default cell, for every key of a default SolveConfig."""
    return {key: toml_default(value) for key, value in config_keys(SolveConfig())}


def generic(key: str) -> str:
    """`models.coding.model` → `models.<role>.model`; other keys unchanged."""
    parts = key.split(".")
    return ".".join([parts[0], ROLE, *parts[2:]]) if parts[0] == "models" else key


# --- reading the pages --------------------------------------------------------------------------


def pages() -> list[Path]:
    """The README and every page of the documentation site."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def between(text: str, markers: tuple[str, str], where: str = "the page") -> str:
    """The text between a BEGIN marker line and its END marker."""
    begin, end = markers
    assert text.count(begin) == 1 and text.count(end) == 1, f"{where} needs one {begin} … {end}"
    after = text.split(begin, 1)[1].split("\n", 1)[1]
    return after.split(end, 1)[0].strip()


def marked_table(markers: tuple[str, str]) -> str:
    """The table between `markers`, on the one page that holds them."""
    holding = [page for page in pages() if markers[0] in page.read_text(encoding="utf-8")]
    assert len(holding) == 1, f"{markers[0]} is on {len(holding)} pages: {holding}"
    return between(holding[0].read_text(encoding="utf-8"), markers, page_name(holding[0]))


def split_row(line: str) -> list[str]:
    """The cells of a Markdown table row, `\\|` kept as a literal pipe."""
    inner = line.strip().strip("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def table_rows(table: str) -> list[list[str]]:
    """The body rows of a Markdown table (the header and the rule left out)."""
    lines = [line for line in table.splitlines() if line.strip().startswith("|")]
    return [split_row(line) for line in lines[2:]]


def code_blocks(text: str) -> Iterator[str]:
    """The fenced code blocks of shell languages (sh, bash, console or none); of a console
    block only the `$ ` lines, the rest being what the commands print."""
    for match in re.finditer(r"^[ \t]*```([\w-]*)[^\n]*\n(.*?)^[ \t]*```", text, re.M | re.S):
        lang, body = match.group(1).lower(), match.group(2)
        if lang == "console":
            yield "".join(
                line.strip() + "\n" for line in body.splitlines() if line.strip().startswith("$ ")
            )
        elif lang in SHELL_LANGS:
            yield body


def shell_commands(block: str) -> Iterator[list[str]]:
    """Each simple command of a block: continuations joined, comments dropped, split at `&&` …"""
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line.removeprefix("$ "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        command: list[str] = []
        for token in lexer:
            if token in OPERATORS:
                yield from [command] if command else []
                command = []
            else:
                command.append(token)
        if command:
            yield command


def invocations(block: str) -> list[list[str]]:
    """The `cra`, `cra-bot` and `make` invocations of a block, from their program name on."""
    found: list[list[str]] = []
    for command in shell_commands(block):
        words = list(command)
        while words and ENV_ASSIGNMENT.match(words[0]):
            words.pop(0)
        if words and Path(words[0]).name in ("cra", "cra-bot", "make"):
            found.append([Path(words[0]).name, *words[1:]])
        elif "cra-bot" in words[1:]:  # e.g. `docker run … IMAGE cra-bot worker`
            found.append(words[words.index("cra-bot") :])
    return found


def commands_of(page: Path) -> list[list[str]]:
    """Every invocation shown in a page's shell blocks."""
    text = page.read_text(encoding="utf-8")
    return [words for block in code_blocks(text) for words in invocations(block)]


def shown_commands() -> list[tuple[str, list[str]]]:
    """(page, invocation) for every invocation on every page."""
    return [(page_name(page), words) for page in pages() for words in commands_of(page)]


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, re.M))


def parse_or_fail(parser: argparse.ArgumentParser, args: list[str], shown: str, where: str) -> None:
    """Parse `args` as the program would; fail the test with argparse's complaint."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            pytest.fail(f"{where} shows `{shown}`, which the program rejects:\n{stderr.getvalue()}")


def check_command(words: list[str], targets: set[str], where: str = "README.md") -> None:
    program, args, shown = words[0], words[1:], " ".join(words)
    if program == "make":
        wanted = [a for a in args if not a.startswith("-") and "=" not in a]
        assert wanted, f"{where} shows `{shown}` without a target"
        for target in wanted:
            assert target in targets, f"{where} shows `{shown}` but the Makefile has no {target}"
    elif program == "cra":
        parse_or_fail(cra_parser(), args, shown, where)
    elif args[:1] == ["register"]:
        parse_or_fail(register_parser(), args[1:], shown, where)
    else:
        parse_or_fail(cra_bot_parser(), args, shown, where)


def subcommands(parser: argparse.ArgumentParser) -> set[str]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name for action in actions for name in action.choices}


# --- the environment table ----------------------------------------------------------------------


def test_env_table_equals_the_bot_settings_fields() -> None:
    assert marked_table(ENV_MARKERS) == render_env_table(), (
        "the environment table differs from BotSettings; the table should be:\n"
        + render_env_table()
    )


def test_env_table_names_every_variable_once() -> None:
    names = [row[0].strip("`") for row in table_rows(marked_table(ENV_MARKERS))]
    expected = [variable.name for variable in environment_variables()]
    assert names == expected and len(set(names)) == len(names)


def test_env_table_defaults_are_what_an_empty_environment_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    variables = {variable.name: variable for variable in environment_variables()}
    for name in variables:
        monkeypatch.delenv(name, raising=False)
    settings = BotSettings()
    for row in table_rows(marked_table(ENV_MARKERS)):
        name = row[0].strip("`")
        if name in ("CRA_DATA_DIR", "CRA_DATABASE_URL"):  # shown unexpanded: `~`, <data_dir>
            continue
        value = settings.value_at(variables[name].path)
        shown = value.get_secret_value() if hasattr(value, "get_secret_value") else value
        assert row[1] == env_default(shown), name


# --- the .github/cra.toml reference -------------------------------------------------------------


def config_rows() -> dict[str, tuple[str, str]]:
    rows = table_rows(marked_table(TOML_MARKERS))
    keys = [row[0].strip("`") for row in rows]
    assert len(keys) == len(set(keys)), "a key is listed twice in the cra.toml reference"
    return {row[0].strip("`"): (row[1], row[2]) for row in rows}


def test_config_reference_lists_every_solve_config_key_with_its_default() -> None:
    shown = config_rows()
    for key, default in actual_config_keys().items():
        row = shown.get(key) or shown.get(generic(key))
        assert row is not None, f"the cra.toml reference lacks {key}"
        assert row[0] == default, f"{key}: the reference says {row[0]}, SolveConfig {default}"


def test_config_reference_lists_no_key_that_does_not_exist() -> None:
    actual = actual_config_keys()
    generics = {generic(key) for key in actual}
    for key in config_rows():
        assert key in actual or key in generics, f"the reference lists {key}, SolveConfig lacks it"


def test_config_reference_explains_every_key() -> None:
    for key, (_, meaning) in config_rows().items():
        assert len(meaning) > 10, f"{key} has no explanation"


# --- commands -----------------------------------------------------------------------------------


def test_every_command_on_every_page_exists() -> None:
    commands = shown_commands()
    assert len(commands) >= 10, commands
    targets = makefile_targets()
    for where, words in commands:
        check_command(words, targets, where)


def test_every_page_is_read_for_commands() -> None:
    names = {page_name(page) for page in pages()}
    assert {"README.md", "docs/cli.md", "docs/configuration.md"} <= names
    assert {where for where, _ in shown_commands()} >= {"README.md", "docs/cli.md"}


def subcommand_of(words: list[str]) -> tuple[str, str]:
    """(program, subcommand) of a `cra` or `cra-bot` invocation that parses."""
    program, args = words[0], words[1:]
    if program == "cra-bot" and args[:1] == ["register"]:
        return program, "register"
    parser = cra_parser() if program == "cra" else cra_bot_parser()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return program, str(parser.parse_args(args).command)


def test_the_pages_show_every_subcommand_of_both_programs() -> None:
    shown = {subcommand_of(w) for _, w in shown_commands() if w[0] != "make"}
    for program, parser in (("cra", cra_parser()), ("cra-bot", cra_bot_parser())):
        for name in subcommands(parser):
            assert (program, name) in shown, f"no page shows `{program} {name}`"


def test_the_readme_shows_the_first_five_minutes() -> None:
    shown = {" ".join(w) for w in commands_of(README)}
    assert {"make demo", "make test"} <= shown
    assert {"cra doctor", "cra-bot register", "cra-bot serve"} <= {
        " ".join(subcommand_of(w)) for w in commands_of(README) if w[0] != "make"
    }


# --- the site -----------------------------------------------------------------------------------


def test_make_test_builds_the_site_strictly() -> None:
    """CI's `make test` runs `make docs`, whose strict build fails on a broken link or anchor.
    Not with mkdocs's --quiet, which hides the warnings --strict counts."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test_rule = re.search(r"^test:(.*)$", makefile, re.M)
    recipe = re.search(r"^docs:.*\n\t(.*)", makefile, re.M)
    assert test_rule and "docs" in test_rule[1].split()
    assert recipe and "mkdocs build --strict" in recipe[1] and "--quiet" not in recipe[1]


def test_the_nav_lists_every_page_once() -> None:
    nav = re.findall(r"^\s+- .*?(\S+\.md)$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M)
    assert sorted(nav) == sorted(page.name for page in DOCS.glob("*.md"))


def test_a_command_the_program_rejects_is_caught() -> None:
    with pytest.raises(pytest.fail.Exception):
        check_command(["cra", "solve", "--no-such-flag", "x"], makefile_targets())
    with pytest.raises(AssertionError):
        check_command(["make", "no-such-target"], makefile_targets())


def test_commands_are_found_behind_env_assignments_operators_and_docker() -> None:
    block = (
        "CRA_MODEL_URL=http://x make demo  # a comment\n"
        "docker run --rm -v cra-data:/data cra \\\n  cra-bot worker\n"
        "cd repo && cra index --repo .\n"
        "pip install -e .\n"
    )
    assert invocations(block) == [
        ["make", "demo"],
        ["cra-bot", "worker"],
        ["cra", "index", "--repo", "."],
    ]


if __name__ == "__main__":
    print(render_env_table())
    print()
    for key, default in actual_config_keys().items():
        print(f"| `{key}` | {default} | |")
