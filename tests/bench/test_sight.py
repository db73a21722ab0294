"""agent.bench.oracle.sight: the part of a fix's hunk the context-honest oracle can write from
what a prompt shows — its changed lines, anchored on whichever lines of git's context stand beside
them in the file's own block — and the paths a prompt names, whole."""

from __future__ import annotations

import re

from agent.bench.oracle.sight import Hunk, names_path, step_files, writable
from agent.bench.patches import FilePatch, oracle_edits

BEFORE = """class Box:
    def open(self):
        self.state = "open"
        return self

    def close(self):
        self.state = "closed"
        return self
"""
# git's hunk for inserting `def shake` between open and close: three lines of context each side
INSERT: Hunk = (
    2,
    [
        "    def open(self):",
        '        self.state = "open"',
        "        return self",
        "",
        "    def close(self):",
        '        self.state = "closed"',
    ],
    [
        "    def open(self):",
        '        self.state = "open"',
        "        return self",
        "",
        "    def shake(self):",
        "        return self",
        "",
        "    def close(self):",
        '        self.state = "closed"',
    ],
)
# git's hunk for a changed line in close, its context running up into open's body
CHANGE: Hunk = (
    4,
    [
        "        return self",
        "",
        "    def close(self):",
        '        self.state = "closed"',
        "        return self",
    ],
    [
        "        return self",
        "",
        "    def close(self):",
        '        self.state = "shut"',
        "        return self",
    ],
)


def block(text: str, path: str = "box.py") -> str:
    return f'<file path="{path}">\n{text}\n</file>'


def test_a_hunk_shown_whole_is_written_whole() -> None:
    assert writable(block(BEFORE), "box.py", BEFORE, INSERT) == INSERT


def test_an_insertion_is_anchored_on_the_shown_header_of_the_definition_after_it() -> None:
    outline = (
        "class Box:\n    def open(self):\n        # … 2 lines …\n\n    def close(self):\n"
        '        self.state = "closed"\n        # … 1 line …'
    )
    written = writable(block(outline), "box.py", BEFORE, INSERT)
    assert written == (
        5,
        ["", "    def close(self):", '        self.state = "closed"'],
        [
            "",
            "    def shake(self):",
            "        return self",
            "",
            "    def close(self):",
            '        self.state = "closed"',
        ],
    )
    # its edit, applied to the file, is the fix
    assert written is not None
    edit = oracle_edits(BEFORE, FilePatch(path="box.py", hunks=[written]))
    found = re.search(r"<search>\n(.*)\n</search>\n<replacement>\n(.*)\n</replacement>", edit, re.S)
    assert found is not None
    search, replacement = found.groups()
    assert BEFORE.replace(search, replacement) == BEFORE.replace(
        "\n    def close", "\n    def shake(self):\n        return self\n\n    def close"
    )


def test_a_changed_line_is_written_from_the_context_shown_with_it() -> None:
    outline = '    def close(self):\n        self.state = "closed"\n        return self'
    written = writable(block(outline), "box.py", BEFORE, CHANGE)
    assert written == (
        5,
        ["", "    def close(self):", '        self.state = "closed"', "        return self"],
        ["", "    def close(self):", '        self.state = "shut"', "        return self"],
    )


def test_a_changed_line_not_shown_is_not_written() -> None:
    outline = "class Box:\n    def open(self):\n        # …\n\n    def close(self):\n        # …"
    assert writable(block(outline), "box.py", BEFORE, CHANGE) is None


def test_an_anchor_found_twice_in_the_file_is_not_enough() -> None:
    # "        return self" alone stands in the prompt, but twice in the file: no place to anchor
    insert_after_return: Hunk = (
        7,
        ['        self.state = "closed"', "        return self"],
        ['        self.state = "closed"', "        return self", "        # done"],
    )
    assert writable(block("        return self"), "box.py", BEFORE, insert_after_return) is None


def test_lines_shown_only_in_another_files_block_do_not_count() -> None:
    prompt = block('    def close(self):\n        self.state = "closed"', path="other.py")
    assert writable(prompt, "box.py", BEFORE, CHANGE) is None


def test_a_path_is_named_whole_not_as_the_head_or_tail_of_another() -> None:
    assert names_path("Files: pkg/mod.py, pkg/mod.pyi", "pkg/mod.pyi")
    assert not names_path("Files: pkg/mod.pyi", "pkg/mod.py")
    assert not names_path("see src/pkg/mod.py", "pkg/mod.py")
    assert names_path("the bug is in pkg/mod.py.", "pkg/mod.py")
    assert names_path('<file path="pkg/mod.py">', "pkg/mod.py")


def test_the_step_names_its_files_on_its_own_line() -> None:
    prompt = (
        "<task>\n<step>\nFiles: decoy.py\n</step>\n</task>\n"
        "<step>\nApply the fix\nFiles: pkg/mod.py, pkg/mod.pyi\n</step>"
    )
    assert step_files(prompt) == ["pkg/mod.py", "pkg/mod.pyi"]
    assert step_files("<task>\nt\n</task>\n<step>\nno files\n</step>") == []
