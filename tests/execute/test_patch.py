"""Edit matching, path safety, all-or-nothing application, rollback and diffs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.errors import PatchRejected, UnsafePath
from agent.execute.edits.matching import exact_starts
from agent.execute.edits.patch import (
    apply_edits,
    check_path,
    replace_once,
    rollback_edits,
    validate_edits,
    write_atomic,
)
from agent.execute.edits.paths import commit_refusal, repository_path
from agent.models import PatchEdit

CALC = """\
class Calculator:
    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b
"""


def _edit(path: str, search: str, replacement: str) -> PatchEdit:
    return PatchEdit(file_path=path, search=search, replacement=replacement)


def _tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# --- replace_once ----------------------------------------------------------------------------


def test_an_exact_unique_match_is_replaced() -> None:
    result = replace_once(CALC, "return a - b", "return a - b  # subtract")
    assert result == CALC.replace("return a - b", "return a - b  # subtract")


def test_an_ambiguous_search_is_rejected_with_the_matching_lines() -> None:
    with pytest.raises(PatchRejected, match="ambiguous: the search text matches 2 times") as caught:
        replace_once(CALC, "(self, a, b):", "(self, a, b, c):")
    assert caught.value.hint.splitlines()[1:] == [
        "line 2:     def add(self, a, b):",
        "line 5:     def sub(self, a, b):",
    ]


def test_a_search_that_is_not_there_is_rejected_with_the_closest_region() -> None:
    wrong = "def sub(self, a, b):\n    return a + b"  # one character differs
    with pytest.raises(PatchRejected, match="search text not found") as caught:
        replace_once(CALC, wrong, "x")
    assert caught.value.hint.splitlines() == [
        "did you mean lines 5-6 (96% similar)?",
        "    5 |     def sub(self, a, b):",
        "    6 |         return a - b",
    ]


def test_a_search_like_nothing_in_the_file_gets_a_plain_hint() -> None:
    with pytest.raises(PatchRejected) as caught:
        replace_once(CALC, "import numpy as np\nnp.zeros(3)", "x")
    assert caught.value.hint.startswith("nothing in the file resembles the search text")


def test_an_indentation_shifted_search_applies_with_a_reindented_replacement() -> None:
    search = "def add(self, a, b):\n    return a + b\n"
    replacement = "def add(self, a, b):\n    total = a + b\n    return total\n"
    assert replace_once(CALC, search, replacement) == CALC.replace(
        "        return a + b\n", "        total = a + b\n        return total\n"
    )


def test_an_over_indented_search_applies_with_the_replacement_moved_left() -> None:
    search = "        def sub(self, a, b):\n            return a - b"
    replacement = "        def sub(self, a, b):\n            return b - a"
    assert replace_once(CALC, search, replacement) == CALC.replace("a - b", "b - a")


def test_an_inconsistent_indentation_shift_is_not_a_match() -> None:
    search = "    def sub(self, a, b):\n    return a - b"  # first line as in the file, second -4
    with pytest.raises(PatchRejected, match="not found"):
        replace_once(CALC, search, "y")


def test_a_search_starting_mid_line_is_an_exact_substring_match() -> None:
    search = "def sub(self, a, b):\n        return a - b"  # copied without the first indent
    replacement = "def sub(self, a, b):\n        return b - a"
    assert replace_once(CALC, search, replacement) == CALC.replace("a - b", "b - a")


def test_trailing_whitespace_in_the_file_is_ignored_when_matching() -> None:
    text = "def f():  \n    return 1\t\n"
    assert replace_once(text, "def f():\n    return 1", "def f():\n    return 2") == (
        "def f():  \n    return 2\n"  # the line the model kept is the file's own
    )


def test_trailing_whitespace_in_the_search_is_ignored_when_matching() -> None:
    text = "a = 1\nb = 2\n"
    assert replace_once(text, "a = 1   \nb = 2 ", "a = 10\nb = 20") == "a = 10\nb = 20\n"


def test_a_blank_line_added_at_the_end_of_search_and_replacement_is_ignored() -> None:
    text = "a = 1\nb = 2\n"
    assert replace_once(text, "a = 1\n\n", "a = 3\n\n") == "a = 3\nb = 2\n"


def test_a_whitespace_normalised_match_must_be_unique() -> None:
    text = "if x:\n    y()\nif z:\n        y()\n"
    with pytest.raises(PatchRejected, match="matches 2 times when whitespace is ignored"):
        replace_once(text, "y()  \n", "w()\n")


def test_a_normalised_search_matching_two_indentations_is_ambiguous() -> None:
    text = "def f():\n    a = 1\n    b = 2\n\ndef g():\n        a = 1\n        b = 2\n"
    with pytest.raises(PatchRejected, match="when whitespace is ignored") as caught:
        replace_once(text, "a = 1 \nb = 2", "a = 0\nb = 2")
    assert "line 2:" in caught.value.hint and "line 6:" in caught.value.hint


def test_interior_whitespace_is_not_normalised() -> None:
    with pytest.raises(PatchRejected, match="not found"):
        replace_once("x = f(a, b)\n", "x = f(a,  b) \n", "x = g(a, b)\n")


def test_a_crlf_file_stays_crlf_when_the_search_uses_lf() -> None:
    text = "a = 1\r\nb = 2\r\nc = 3\r\n"
    result = replace_once(text, "a = 1\nb = 2\n", "a = 1\nb = 20\nb2 = 21\n")
    assert result == "a = 1\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n"


def test_an_exact_single_line_match_in_a_crlf_file_gets_crlf_in_the_replacement() -> None:
    text = "a = 1\r\nb = 2\r\n"
    assert replace_once(text, "b = 2", "b = 2\nc = 3") == "a = 1\r\nb = 2\r\nc = 3\r\n"


def test_an_lf_file_gets_lf_from_a_crlf_replacement() -> None:
    assert replace_once("a\nb\n", "b", "b\r\nc") == "a\nb\nc\n"


def test_a_match_on_the_last_line_without_newline_stays_without_newline() -> None:
    assert replace_once("a\n    b", "b \n", "c\n") == "a\n    c"


def test_an_empty_replacement_deletes_the_matched_lines() -> None:
    text = "import os\nimport sys\n\nprint(1)\n"
    assert replace_once(text, "import sys\n", "") == "import os\n\nprint(1)\n"
    assert replace_once(text, "  import sys  ", "") == "import os\n\nprint(1)\n"


def test_deleting_whole_lines_also_removes_their_line_ending() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    assert replace_once(text, "b = 2", "") == "a = 1\nc = 3\n"
    assert replace_once(text.replace("\n", "\r\n"), "b = 2", "") == "a = 1\r\nc = 3\r\n"


def test_deleting_part_of_a_line_keeps_the_line() -> None:
    assert replace_once("x = f(a, b)\ny = 2\n", ", b", "") == "x = f(a)\ny = 2\n"
    assert replace_once("x = 1  # old\n", "  # old", "") == "x = 1\n"


def test_an_empty_search_on_a_non_empty_text_is_rejected() -> None:
    with pytest.raises(PatchRejected, match="empty search"):
        replace_once("x = 1\n", "", "y = 2\n")


@given(
    before=st.text(alphabet=st.characters(exclude_characters="\r")),
    needle=st.text(alphabet=st.characters(exclude_characters="\r"), min_size=1),
    after=st.text(alphabet=st.characters(exclude_characters="\r")),
    replacement=st.text(alphabet=st.characters(exclude_characters="\r"), min_size=1),
)
def test_a_unique_substring_is_replaced_like_str_replace(
    before: str, needle: str, after: str, replacement: str
) -> None:
    """CR is left out (line endings follow the file); empty replacements delete whole lines.
    Occurrences that would glue lines or split a word are not exact matches, and a byte order
    mark opening the file stays whatever the edit says (both tested apart)."""
    text = before + needle + after
    starts = [i for i in range(len(text)) if text.startswith(needle, i)]
    if len(starts) != 1 or exact_starts(text, needle) != starts or text.startswith("\ufeff"):
        return
    assert replace_once(text, needle, replacement) == text.replace(needle, replacement, 1)


# --- paths -----------------------------------------------------------------------------------


def test_dot_slash_paths_are_normalised(tmp_path: Path) -> None:
    assert check_path(tmp_path, "./src/./a.py") == tmp_path.resolve() / "src" / "a.py"


def test_a_symlink_inside_the_tree_resolves_to_its_target(tmp_path: Path) -> None:
    _tree(tmp_path, {"real.py": "x"})
    (tmp_path / "alias.py").symlink_to("real.py")
    assert check_path(tmp_path, "alias.py") == tmp_path.resolve() / "real.py"


def test_other_github_files_are_not_protected(tmp_path: Path) -> None:
    assert check_path(tmp_path, ".github/CODEOWNERS").name == "CODEOWNERS"


def test_protected_globs_are_configurable(tmp_path: Path) -> None:
    assert check_path(tmp_path, ".github/workflows/ci.yml", protected=[]).name == "ci.yml"
    with pytest.raises(UnsafePath, match="protected"):
        check_path(tmp_path, "deploy/prod/secrets.yaml", protected=["deploy/**/*.yaml"])
    with pytest.raises(UnsafePath, match="protected"):
        check_path(tmp_path, "deploy/x.yaml", protected=["deploy/**/*.yaml"])


# --- apply -----------------------------------------------------------------------------------


def test_an_edit_is_applied_and_reported(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    result = apply_edits([_edit("calc.py", "return a - b", "return b - a")], tmp_path)
    assert result.success, result.error_info
    assert (tmp_path / "calc.py").read_text() == CALC.replace("a - b", "b - a")
    assert result.files_modified == ["calc.py"]
    assert result.original_contents == {"calc.py": CALC}


def test_a_file_with_a_byte_order_mark_keeps_it_through_a_forgiving_edit_of_line_one(
    tmp_path: Path,
) -> None:
    _tree(tmp_path, {"calc.py": b"\xef\xbb\xbf" + CALC.encode()})
    result = apply_edits(
        [
            _edit(
                "calc.py",
                "class Calculator:   \n    def add(self, a, b):",
                "class Calc:\n    def add(self, a, b):",
            )
        ],
        tmp_path,
    )
    assert result.success, result.error_info
    assert (tmp_path / "calc.py").read_bytes() == b"\xef\xbb\xbf" + CALC.replace(
        "class Calculator:", "class Calc:"
    ).encode()


def test_multiple_edits_to_one_file_apply_in_sequence(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    edits = [
        _edit("calc.py", "return a + b", "return self.total(a, b)"),
        _edit("calc.py", "return self.total(a, b)", "return self.total(a, b)  # sum"),
    ]
    result = apply_edits(edits, tmp_path)
    assert result.success, result.error_info
    assert "return self.total(a, b)  # sum" in (tmp_path / "calc.py").read_text()
    assert result.files_modified == ["calc.py"]


def test_a_new_file_is_created_with_its_parent_directories(tmp_path: Path) -> None:
    result = apply_edits(
        [_edit("tests/unit/test_calc.py", "", "def test_add():\n    pass")], tmp_path
    )
    assert result.success, result.error_info
    assert (tmp_path / "tests/unit/test_calc.py").read_text() == "def test_add():\n    pass\n"
    assert result.files_created == ["tests/unit/test_calc.py"]
    assert result.original_contents == {"tests/unit/test_calc.py": None}
    assert result.dirs_created == ["tests", "tests/unit"]


def test_an_empty_search_on_an_existing_file_is_rejected(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    result = apply_edits([_edit("calc.py", "", "x = 1\n")], tmp_path)
    assert not result.success
    assert "empty search" in (result.error_info or "")


def test_a_deletion_removes_the_lines(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    search = "\n    def sub(self, a, b):\n        return a - b\n"
    result = apply_edits([_edit("calc.py", search, "")], tmp_path)
    assert result.success, result.error_info
    assert (tmp_path / "calc.py").read_text() == CALC.split("\n\n")[0] + "\n"


def test_a_missing_file_is_rejected(tmp_path: Path) -> None:
    result = apply_edits([_edit("nope.py", "x = 1", "x = 2")], tmp_path)
    assert not result.success
    assert result.error_info == (
        "edit 1 of 1 (nope.py): file not found; to create a new file use an empty <search>"
    )


def test_an_ambiguous_edit_fails_with_index_file_reason_and_hint(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    edits = [_edit("calc.py", "return a + b", "return a+b"), _edit("calc.py", "(self, a, b)", "")]
    result = apply_edits(edits, tmp_path)
    assert not result.success
    assert (result.error_info or "").startswith("edit 2 of 2 (calc.py): ambiguous")
    assert "line 2:" in result.hint
    assert (tmp_path / "calc.py").read_text() == CALC


def test_a_not_found_edit_carries_the_closest_region_as_hint(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    result = apply_edits([_edit("calc.py", "return a * b", "return a ** b")], tmp_path)
    assert not result.success
    assert "search text not found" in (result.error_info or "")
    assert result.hint.startswith("did you mean line")


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        ("../x.py", "'..'"),
        ("/tmp/x.py", "absolute path"),
        (".git/config", ".git/"),
        (".github/workflows/ci.yml", "protected path"),
    ],
)
def test_an_unsafe_edit_is_rejected_and_nothing_is_written(
    tmp_path: Path, rel: str, reason: str
) -> None:
    root = _tree(
        tmp_path / "repo",
        {"calc.py": CALC, ".git/config": "[core]\n", ".github/workflows/ci.yml": "on: push\n"},
    )
    before = _snapshot(tmp_path)
    result = apply_edits([_edit("calc.py", "a + b", "b + a"), _edit(rel, "", "evil\n")], root)
    assert not result.success
    assert f"edit 2 of 2 ({rel}):" in (result.error_info or "")
    assert reason in (result.error_info or "")
    assert _snapshot(tmp_path) == before


def test_an_edit_into_a_real_submodule_is_refused_where_git_would_drop_it(
    tmp_path: Path,
) -> None:
    """In a worktree of a repository with a submodule (not checked out, as a run's worktree has
    it), `git add --all` would leave a file created there out of the commit without a word."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(
            ["git", "-c", "protocol.file.allow=always", *args],
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
        )

    for name in ("sub", "main"):
        (tmp_path / name).mkdir()
        git("init", "-q", "-b", "main", cwd=tmp_path / name)
        (tmp_path / name / f"{name}.py").write_text("x = 1\n")
        git("add", ".", cwd=tmp_path / name)
        git("commit", "-qm", name, cwd=tmp_path / name)
    git("submodule", "add", "-q", "../sub", "lib", cwd=tmp_path / "main")
    git("commit", "-qm", "lib", cwd=tmp_path / "main")
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt"), cwd=tmp_path / "main")
    worktree = tmp_path / "wt"
    before = _snapshot(worktree)
    result = apply_edits(
        [_edit("main.py", "x = 1", "x = 2"), _edit("lib/new.py", "", "y\n")], worktree
    )
    assert not result.success
    assert "edit 2 of 2 (lib/new.py): inside the submodule lib/" in (result.error_info or "")
    assert _snapshot(worktree) == before


def _repository(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` with `files` committed."""
    _tree(root, files)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "files"]):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True, capture_output=True)
    return root


def test_edits_a_commit_takes_are_not_refused(tmp_path: Path) -> None:
    root = _repository(
        tmp_path, {"a.py": "x = 1\n", "*weird?.py": "y = 1\n", ".gitignore": "*.log\n!keep.log\n"}
    )
    edits = [
        _edit("a.py", "x = 1", "x = 2"),
        _edit("./*weird?.py", "y = 1", "y = 2"),
        _edit("pkg/new.py", "", "z = 1\n"),
        _edit("keep.log", "", "kept\n"),
        _edit("../outside.py", "", "left to the edit engine\n"),
    ]
    assert commit_refusal(root, edits) is None


def test_a_new_file_git_ignores_is_refused_naming_the_rule(tmp_path: Path) -> None:
    root = _repository(tmp_path, {"a.py": "x = 1\n", ".gitignore": "# out\nbuild/\n*.log\n"})
    edits = [
        _edit("a.py", "x = 1", "x = 2"),
        _edit("build/gen.py", "", "g = 1\n"),
        _edit("debug.log", "", "d\n"),
    ]
    refusal = commit_refusal(root, edits) or ""
    assert refusal.startswith(
        "edit 2 of 3 (build/gen.py): git ignores this path (`build/` in .gitignore, line 2)"
    )


def test_an_edit_through_a_symlink_is_committed_by_its_target(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"real.py": "x = 1\n", "pkg/a.py": ""})
    (root / "alias.py").symlink_to("real.py")
    (root / "link").symlink_to("pkg")
    assert repository_path(root, "./alias.py") == "real.py"
    assert repository_path(root, "link/new.py") == "pkg/new.py"
    result = apply_edits([_edit("alias.py", "x = 1", "x = 2")], root)
    assert result.success and "+++ b/real.py" in result.diff
    assert (root / "real.py").read_text() == "x = 2\n" and (root / "alias.py").is_symlink()


def test_an_existing_untracked_file_is_refused(tmp_path: Path) -> None:
    root = _repository(tmp_path, {"a.py": "x = 1\n", ".gitignore": "node_modules/\n"})
    _tree(root, {"node_modules/lib/index.js": "a\n", "generated.py": "g = 1\n"})
    for rel in ("node_modules/lib/index.js", "generated.py"):
        refusal = commit_refusal(root, [_edit(rel, "g", "h")]) or ""
        assert refusal.startswith(f"edit 1 of 1 ({rel}): not one of the repository's files")


def test_a_later_failing_edit_leaves_earlier_files_untouched(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC, "other.py": "y = 1\n"})
    edits = [
        _edit("calc.py", "a + b", "b + a"),
        _edit("new.py", "", "n = 1\n"),
        _edit("other.py", "y = 2", "y = 3"),
    ]
    before = _snapshot(tmp_path)
    result = apply_edits(edits, tmp_path)
    assert not result.success
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "new.py").exists()


def test_validate_edits_reports_every_failing_edit_without_writing(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    edits = [
        _edit("calc.py", "a * b", "x"),
        _edit("calc.py", "a + b", "x"),
        _edit("gone.py", "x", "y"),
    ]
    problems = validate_edits(edits, tmp_path)
    assert [p.split(":")[0] for p in problems] == ["edit 1 of 3 (calc.py)", "edit 3 of 3 (gone.py)"]
    assert (tmp_path / "calc.py").read_text() == CALC


def test_a_non_utf8_file_is_rejected_with_a_clear_reason(tmp_path: Path) -> None:
    _tree(tmp_path, {"latin.py": "name = 'Jos\xe9'\n".encode("latin-1")})
    result = apply_edits([_edit("latin.py", "name", "title")], tmp_path)
    assert not result.success
    assert "not a UTF-8 text file" in (result.error_info or "")


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    result = apply_edits([_edit("pkg", "", "x")], tmp_path)
    assert "is a directory" in (result.error_info or "")


def test_the_file_mode_is_preserved(tmp_path: Path) -> None:
    _tree(tmp_path, {"run.sh": "#!/bin/sh\necho hi\n"})
    (tmp_path / "run.sh").chmod(0o755)
    assert apply_edits([_edit("run.sh", "echo hi", "echo hello")], tmp_path).success
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o755


def test_a_crlf_file_stays_crlf_on_disk(tmp_path: Path) -> None:
    _tree(tmp_path, {"app.js": "const a = 1;\r\nconst b = 2;\r\n"})
    edit = _edit("app.js", "const a = 1;\nconst b = 2;", "const a = 1;\nconst b = 3;\nconst c = 4;")
    assert apply_edits([edit], tmp_path).success
    assert (tmp_path / "app.js").read_bytes() == b"const a = 1;\r\nconst b = 3;\r\nconst c = 4;\r\n"


def test_no_temp_files_are_left_behind(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    assert apply_edits([_edit("calc.py", "a + b", "b + a")], tmp_path).success
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calc.py"]


class FailingWriter:
    """A real atomic writer that fails when asked to write one chosen path."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on
        self.written: list[str] = []

    def __call__(self, path: Path, content: str, mode: int | None) -> None:
        if path.name == self.fail_on:
            raise OSError(28, "No space left on device")
        self.written.append(path.name)
        write_atomic(path, content, mode)


def test_a_write_failing_midway_restores_everything_written_so_far(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.py": "a = 1\n", "z.py": "z = 1\n"})
    before = _snapshot(tmp_path)
    edits = [
        _edit("a.py", "a = 1", "a = 2"),
        _edit("pkg/new.py", "", "n = 1"),
        _edit("z.py", "z = 1", "z = 2"),
    ]
    writer = FailingWriter("z.py")
    result = apply_edits(edits, tmp_path, write=writer)
    assert not result.success
    assert writer.written == ["a.py", "new.py", "a.py"]  # the last one is the restore
    assert "writing z.py failed" in (result.error_info or "")
    assert "all 2 file(s) written before it were restored" in (result.error_info or "")
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "pkg").exists()


# --- rollback and diff -----------------------------------------------------------------------


def test_rollback_restores_exact_bytes_and_removes_created_files_and_dirs(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {"calc.py": CALC.replace("\n", "\r\n"), "util.py": "u = 'ü'\n", "pkg/__init__.py": ""},
    )
    before = _snapshot(tmp_path)
    edits = [
        _edit("calc.py", "return a + b\n", "return a + b + 0\n"),
        _edit("util.py", "u = 'ü'", "u = 'ÿ'"),
        _edit("pkg/sub/deep/new.py", "", "x = 1"),
        _edit("pkg/other.py", "", "y = 1"),
    ]
    result = apply_edits(edits, tmp_path)
    assert result.success, result.error_info
    rollback_edits(result, tmp_path)
    assert _snapshot(tmp_path) == before
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "calc.py",
        "pkg",
        "pkg/__init__.py",
        "util.py",
    ]


def test_rollback_of_a_failed_result_changes_nothing(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    result = apply_edits([_edit("calc.py", "nothing like this", "x")], tmp_path)
    rollback_edits(result, tmp_path)
    assert (tmp_path / "calc.py").read_text() == CALC


def test_the_diff_is_git_style(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc.py": CALC})
    result = apply_edits(
        [_edit("calc.py", "return a - b", "return b - a"), _edit("new.txt", "", "hello")], tmp_path
    )
    assert result.diff == (
        "diff --git a/calc.py b/calc.py\n"
        "--- a/calc.py\n"
        "+++ b/calc.py\n"
        "@@ -3,4 +3,4 @@\n"
        "         return a + b\n"
        " \n"
        "     def sub(self, a, b):\n"
        "-        return a - b\n"
        "+        return b - a\n"
        "diff --git a/new.txt b/new.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/new.txt\n"
        "@@ -0,0 +1 @@\n"
        "+hello\n"
    )


def test_the_diff_marks_a_missing_newline_at_end_of_file(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.txt": "one\ntwo"})
    result = apply_edits([_edit("a.txt", "two", "three")], tmp_path)
    assert result.diff.endswith(
        "-two\n\\ No newline at end of file\n+three\n\\ No newline at end of file\n"
    )


def test_git_accepts_the_diff(tmp_path: Path) -> None:
    original = {"calc.py": CALC, "a.txt": "one\ntwo", "w.bat": "@echo off\r\necho 1\r\n"}
    _tree(tmp_path / "before", original)
    work = _tree(tmp_path / "work", original)
    edits = [
        _edit(
            "calc.py",
            "def sub(self, a, b):\n    return a - b",
            "def sub(self, a, b):\n    return b - a",
        ),
        _edit("a.txt", "two", "two\nthree"),
        _edit("w.bat", "echo 1", "echo 2"),
        _edit("docs/new.md", "", "# New"),
    ]
    result = apply_edits(edits, work)
    assert result.success, result.error_info
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "before", check=True, env=env)
    subprocess.run(
        ["git", "apply", "-"],
        cwd=tmp_path / "before",
        check=True,
        env=env,
        input=result.diff.encode(),
    )
    snapshot = _snapshot(tmp_path / "before")
    snapshot.pop(".git", None)
    assert {k: v for k, v in snapshot.items() if not k.startswith(".git/")} == _snapshot(work)


def test_a_wrong_path_is_refused_naming_the_file_of_that_name(tmp_path: Path) -> None:
    _tree(tmp_path, {"calc/ops.py": CALC})
    result = apply_edits([_edit("ops.py", "return a - b", "return b - a")], tmp_path)
    assert not result.success
    assert result.error_info is not None and "file not found" in result.error_info
    assert "did you mean calc/ops.py?" in result.error_info
    assert result.hint == "files of that name: calc/ops.py"
