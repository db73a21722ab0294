"""Edit cases made from real programs: a block of a real source file, an intended change to it,
and the answer a small model typically writes for it (whitespace drift, tabs, a stray blank
line, `...` elisions, CRLF, wrong or ambiguous searches), with the expected outcome computed
from the intended change alone, never by the edit engine.

Run: .venv/bin/python benchmarks/edit_corpus.py [--source DIR] [--per-shape 36] [--seed 12]
(prints a summary; benchmarks/edits.py runs these cases beside its hand-written corpus).
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.edit_case import Case

SKIP_PARTS = {"test", "tests", "site-packages", "idlelib", "lib2to3", "__pycache__"}
FORBIDDEN = ("```", "<edit", "</search>", "<search>", "</replacement>", "<replacement>")
MARKERS = ("...", "# ...", "# ... existing code ...")


@dataclass(frozen=True)
class Source:
    """One real file: its repository path and text."""

    path: str
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")[:-1]


def stdlib_dir() -> Path:
    """This interpreter's standard library."""
    return Path(sysconfig.get_paths()["stdlib"])


def load_sources(root: Path, limit: int = 400) -> list[Source]:
    """Python files under `root` (tests and vendored code left out) that suit the cases."""
    found: list[Source] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if SKIP_PARTS & set(rel.parts) or not 2_000 <= path.stat().st_size <= 120_000:
            continue
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if "\r" not in text and "\t" not in text and text.endswith("\n"):
            found.append(Source(rel.as_posix(), text))
        if len(found) >= limit:
            break
    return found


# --- independent checks (never the engine's code) -----------------------------------------------


def codes(lines: list[str]) -> list[str]:
    """The non-blank lines stripped of surrounding whitespace."""
    return [line.strip() for line in lines if line.strip()]


def count_code_runs(haystack: list[str], needle: list[str]) -> int:
    """How often the needle's code lines follow each other in the haystack (blanks ignored)."""
    hay, want = codes(haystack), codes(needle)
    if not want:
        return 0
    return sum(hay[i : i + len(want)] == want for i in range(len(hay) - len(want) + 1))


def count_whole_lines(lines: list[str], block: list[str]) -> int:
    """How often the block occurs as whole lines."""
    n = len(block)
    return sum(lines[i : i + n] == block for i in range(len(lines) - n + 1))


def indent(line: str) -> str:
    """The leading whitespace of `line`."""
    return line[: len(line) - len(line.lstrip(" \t"))]


# --- the intended change -------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """A block of lines [start, start + len(old)) and what it becomes."""

    start: int
    old: list[str]
    new: list[str]
    changed: int  # the index in `old` of the line the change is about
    kind: str  # edit, add or drop

    def moved(self, i: int) -> int:
        """Where line `i` of `old` is in `new` (a dropped line: where it was)."""
        if i <= self.changed:
            return i
        return i + {"edit": 0, "add": 1, "drop": -1}[self.kind]


def pick_block(
    rng: random.Random, src: Source, size: int, *, unique: bool = True
) -> tuple[int, list[str]] | None:
    """An indented block of `size` lines starting and ending with code, unique in the file."""
    lines = src.lines
    for _ in range(40):
        start = rng.randrange(0, max(1, len(lines) - size))
        block = lines[start : start + size]
        if (
            len(block) < size
            or not block[0].strip()
            or not block[-1].strip()
            or block[0][:1] not in (" ", "\t")
            or any(f in "\n".join(block) for f in FORBIDDEN)
            or len(codes(block)) < min(2, size)
        ):
            continue
        if unique and (count_whole_lines(lines, block) != 1 or count_code_runs(lines, block) != 1):
            continue
        return start, block
    return None


def intend(rng: random.Random, start: int, block: list[str], avoid: range = range(0)) -> Change:
    """A realistic small change to one code line: edit it, add a line after it, or drop it."""
    choices = [i for i, line in enumerate(block) if line.strip() and i not in avoid]
    at = rng.choice(choices)
    line = block[at]
    kind = rng.choice(("edit", "add", "drop") if len(codes(block)) > 2 else ("edit", "add"))
    if kind == "edit":
        new = [*block[:at], f"{line.rstrip()}  # checked", *block[at + 1 :]]
    elif kind == "add":
        new = [*block[: at + 1], f"{indent(line)}_trace({at})", *block[at + 1 :]]
    else:
        new = [*block[:at], *block[at + 1 :]]
    return Change(start, block, new, at, kind)


def expected_text(src: Source, change: Change, eol: str = "\n") -> str:
    """The file after the intended change."""
    lines = src.lines
    out = [*lines[: change.start], *change.new, *lines[change.start + len(change.old) :]]
    return "".join(line + eol for line in out)


def answer(
    path: str,
    search: list[str],
    replacement: list[str],
    *,
    lead: str = "",
    trail: str = "",
    eol: str = "\n",
) -> str:
    """The model's edit block."""

    def body(lines: list[str]) -> str:
        return eol.join(lines)

    return (
        f'<edit file="{path}">{eol}<search>{eol}{lead}{body(search)}{trail}{eol}</search>'
        f"{eol}<replacement>{eol}{body(replacement)}{eol}</replacement>{eol}</edit>"
    )


# --- the shapes --------------------------------------------------------------------------------

Maker = Callable[[random.Random, Source], "Case | None"]


def applies(
    shape: str,
    src: Source,
    change: Change,
    search: list[str],
    replacement: list[str],
    *,
    file_text: str | None = None,
    expected: str | None = None,
    **kw: str,
) -> Case:
    """A case that must apply and leave exactly the intended file."""
    return Case(
        name="",
        shape=shape,
        files={src.path: file_text or src.text},
        answer=answer(src.path, search, replacement, **kw),
        expect="apply",
        expected_files={src.path: expected or expected_text(src, change)},
    )


def rejects(
    shape: str, src: Source, search: list[str], replacement: list[str], reason: str
) -> Case:
    """A case that must be refused for `reason`, leaving the file as it was."""
    return Case(
        name="",
        shape=shape,
        files={src.path: src.text},
        answer=answer(src.path, search, replacement),
        expect="reject",
        reason=reason,
    )


def _change(rng: random.Random, src: Source, low: int = 2, high: int = 6) -> Change | None:
    picked = pick_block(rng, src, rng.randint(low, high))
    return intend(rng, *picked) if picked else None


def exact(rng: random.Random, src: Source) -> Case | None:
    change = _change(rng, src)
    return applies("exact", src, change, change.old, change.new) if change else None


def trailing_ws_dropped(rng: random.Random, src: Source) -> Case | None:
    """The file has trailing spaces on some lines; the model's copy has none."""
    picked = pick_block(rng, src, rng.randint(2, 6))
    if picked is None:
        return None
    start, block = picked
    spaced = [line + "  " if line.strip() and rng.random() < 0.6 else line for line in block]
    lines = src.lines
    dirty = Source(
        src.path, "".join(f"{x}\n" for x in [*lines[:start], *spaced, *lines[start + len(block) :]])
    )
    change = intend(rng, start, spaced)
    return applies(
        "trailing_ws_dropped",
        dirty,
        change,
        [x.rstrip() for x in change.old],
        [x.rstrip() for x in change.new],
    )


def trailing_ws_added(rng: random.Random, src: Source) -> Case | None:
    """The model's copy adds trailing spaces to lines it keeps."""
    change = _change(rng, src)
    if change is None:
        return None
    drifted = {x for x in change.old if x.strip() and rng.random() < 0.6}

    def drift(lines: list[str]) -> list[str]:
        return [x + " " if x in drifted else x for x in lines]

    return applies("trailing_ws_added", src, change, drift(change.old), drift(change.new))


def _reindent(lines: list[str], how: Callable[[str], str]) -> list[str]:
    return [how(x) if x.strip() else x for x in lines]


def indent_dedented(rng: random.Random, src: Source) -> Case | None:
    """Search and replacement copied without the block's common indentation."""
    change = _change(rng, src)
    if change is None:
        return None
    cut = min(len(indent(x)) for x in change.old if x.strip())
    return applies(
        "indent_dedented",
        src,
        change,
        _reindent(change.old, lambda x: x[cut:]),
        _reindent(change.new, lambda x: x[cut:]),
    )


def indent_over(rng: random.Random, src: Source) -> Case | None:
    """Search and replacement indented one level deeper than the file."""
    change = _change(rng, src)
    if change is None:
        return None
    return applies(
        "indent_over",
        src,
        change,
        _reindent(change.old, lambda x: "    " + x),
        _reindent(change.new, lambda x: "    " + x),
    )


def to_tabs(line: str) -> str:
    """Leading groups of four spaces as tabs."""
    lead = indent(line)
    return "\t" * (len(lead) // 4) + " " * (len(lead) % 4) + line[len(lead) :]


def to_spaces(line: str) -> str:
    """Leading tabs as four spaces each."""
    lead = indent(line)
    return lead.replace("\t", "    ") + line[len(lead) :]


def tabs_for_spaces(rng: random.Random, src: Source) -> Case | None:
    """A space-indented file searched with tabs."""
    change = _change(rng, src)
    if change is None:
        return None
    return applies(
        "tabs_for_spaces",
        src,
        change,
        _reindent(change.old, to_tabs),
        _reindent(change.new, to_tabs),
    )


def spaces_for_tabs(rng: random.Random, src: Source) -> Case | None:
    """A tab-indented file (the same program, indented with tabs) searched with spaces."""
    tabbed = Source(src.path, "".join(to_tabs(x) + "\n" for x in src.lines))
    change = _change(rng, tabbed)
    if change is None:
        return None
    return applies(
        "spaces_for_tabs",
        tabbed,
        change,
        _reindent(change.old, to_spaces),
        _reindent(change.new, to_spaces),
    )


def blank_lead(rng: random.Random, src: Source) -> Case | None:
    """The search opens with a blank line the file does not have there."""
    change = _change(rng, src)
    if change is None or not src.lines[change.start - 1].strip():
        return None
    new = ["", *change.new] if rng.random() < 0.5 else change.new
    return applies("blank_lead", src, change, change.old, new, lead="\n")


def blank_trail(rng: random.Random, src: Source) -> Case | None:
    """The search closes with a blank line the file does not have there."""
    change = _change(rng, src)
    end = change.start + len(change.old) if change else 0
    if change is None or end >= len(src.lines) or not src.lines[end].strip():
        return None
    new = [*change.new, ""] if rng.random() < 0.5 else change.new
    return applies("blank_trail", src, change, change.old, new, trail="\n")


def _paragraph(rng: random.Random, src: Source) -> Change | None:
    """A blank line added inside a block, never at its edges (a blank there could mirror the
    search's own): before or after a new line, or before a code line that is also edited."""
    picked = pick_block(rng, src, rng.randint(2, 6))
    if picked is None:
        return None
    start, block = picked
    at = rng.choice([i for i, line in enumerate(block[:-1]) if line.strip()])
    added = f"{indent(block[at])}_trace({at})"
    after = block[at + 1]
    pair = rng.choice(
        (
            ["", added],
            [added, ""],
            ["", f"{after.rstrip()}  # checked"] if after.strip() else ["", added],
        )
    )
    rest = block[at + 2 :] if pair[-1].endswith("# checked") else block[at + 1 :]
    return Change(start, block, [*block[: at + 1], *pair, *rest], at, "add")


def blank_lead_search_only(rng: random.Random, src: Source) -> Case | None:
    """The search opens with a blank line the file does not have there; the replacement does
    not, and adds a blank line of its own inside."""
    change = _paragraph(rng, src)
    if change is None or change.start == 0 or not src.lines[change.start - 1].strip():
        return None
    return applies("blank_lead_search_only", src, change, change.old, change.new, lead="\n")


def blank_trail_search_only(rng: random.Random, src: Source) -> Case | None:
    """The search closes with a blank line the file does not have there; the replacement does
    not, and adds a blank line of its own inside."""
    change = _paragraph(rng, src)
    end = change.start + len(change.old) if change else 0
    if change is None or end >= len(src.lines) or not src.lines[end].strip():
        return None
    return applies("blank_trail_search_only", src, change, change.old, change.new, trail="\n")


def stray_blank(rng: random.Random, src: Source) -> Case | None:
    """The model's copy has a blank line inside the block where the file has none."""
    change = _change(rng, src, 3, 7)
    if change is None:
        return None
    spots = [
        p
        for p in range(1, len(change.old))
        if change.old[p - 1].strip() and change.old[p].strip() and change.changed not in (p - 1, p)
    ]
    if not spots:
        return None
    p = rng.choice(spots)
    q = change.moved(p)
    return applies(
        "stray_blank",
        src,
        change,
        [*change.old[:p], "", *change.old[p:]],
        [*change.new[:q], "", *change.new[q:]],
    )


def dropped_blank(rng: random.Random, src: Source) -> Case | None:
    """The model's copy leaves out a blank line inside the block."""
    change = _change(rng, src, 4, 9)
    if change is None:
        return None
    spots = [
        p
        for p in range(1, len(change.old) - 1)
        if not change.old[p].strip() and abs(change.changed - p) > 1
    ]
    if not spots:
        return None
    p = rng.choice(spots)
    q = change.moved(p)
    return applies(
        "dropped_blank",
        src,
        change,
        [*change.old[:p], *change.old[p + 1 :]],
        [*change.new[:q], *change.new[q + 1 :]],
    )


def elision(rng: random.Random, src: Source) -> Case | None:
    """The model leaves out the middle of the block with a `...` line in both halves."""
    picked = pick_block(rng, src, rng.randint(7, 12))
    if picked is None:
        return None
    start, block = picked
    a = rng.randint(2, len(block) - 4)
    b = rng.randint(a + 2, len(block) - 2)
    change = intend(rng, start, block, avoid=range(a - 1, b + 1))
    head, tail = block[:a], block[b:]
    lines = src.lines
    if any(count_code_runs(lines, part) != 1 for part in (head, tail)):
        return None
    marker = indent(block[a]) + rng.choice(MARKERS)
    qa, qb = change.moved(a), change.moved(b)
    return applies(
        "elision", src, change, [*head, marker, *tail], [*change.new[:qa], marker, *change.new[qb:]]
    )


def crlf(rng: random.Random, src: Source) -> Case | None:
    """A CRLF file; the answer in LF (or CRLF, every other case)."""
    change = _change(rng, src)
    if change is None:
        return None
    text = src.text.replace("\n", "\r\n")
    eol = "\r\n" if rng.random() < 0.5 else "\n"
    return applies(
        "crlf",
        src,
        change,
        change.old,
        change.new,
        file_text=text,
        expected=expected_text(src, change, "\r\n"),
        eol=eol,
    )


def deletion(rng: random.Random, src: Source) -> Case | None:
    """The block deleted: an empty replacement."""
    change = _change(rng, src)
    if change is None:
        return None
    gone = Change(change.start, change.old, [], 0, "edit")
    return applies("deletion", src, gone, gone.old, [])


def wrong_search(rng: random.Random, src: Source) -> Case | None:
    """One character of a code line misremembered: nothing matches, so it must be refused."""
    change = _change(rng, src)
    if change is None:
        return None
    spots = [(i, k) for i, x in enumerate(change.old) for k, c in enumerate(x) if c.isalpha()]
    i, k = rng.choice(spots)
    line = change.old[i]
    swapped = "x" if line[k] != "x" else "y"
    search = [*change.old[:i], line[:k] + swapped + line[k + 1 :], *change.old[i + 1 :]]
    if count_code_runs(src.lines, search) or "\n".join(search) in src.text:
        return None
    return rejects("wrong_search", src, search, change.new, "search text not found")


def missing_line(rng: random.Random, src: Source) -> Case | None:
    """A code line inside the block left out of the search: refused, never fuzzy-matched."""
    change = _change(rng, src, 4, 8)
    if change is None:
        return None
    spots = [
        p for p in range(1, len(change.old) - 1) if change.old[p].strip() and p != change.changed
    ]
    if not spots:
        return None
    p = rng.choice(spots)
    search = [*change.old[:p], *change.old[p + 1 :]]
    if count_code_runs(src.lines, search):
        return None
    return rejects("missing_line", src, search, change.new, "search text not found")


def _repeated(rng: random.Random, src: Source, size: int) -> list[str] | None:
    """A block of code lines whose code occurs more than once in the file."""
    lines = src.lines
    for _ in range(60):
        start = rng.randrange(0, max(1, len(lines) - size))
        block = lines[start : start + size]
        if (
            len(codes(block)) == size
            and all(len(x.strip()) >= 12 for x in block)
            and not any(f in "\n".join(block) for f in FORBIDDEN)
            and count_code_runs(lines, block) > 1
        ):
            return block
    return None


def ambiguous_exact(rng: random.Random, src: Source) -> Case | None:
    """The search, copied exactly, occurs twice or more."""
    block = _repeated(rng, src, rng.randint(1, 2))
    if block is None or count_whole_lines(src.lines, block) < 2:
        return None
    return rejects(
        "ambiguous_exact", src, block, [*block, indent(block[-1]) + "_trace(0)"], "ambiguous"
    )


def ambiguous_flexible(rng: random.Random, src: Source) -> Case | None:
    """Written with tabs, the search matches nothing exactly but two places or more once
    whitespace is forgiven: it must be refused, not applied to the first."""
    block = _repeated(rng, src, rng.randint(1, 3))
    if block is None:
        return None
    tabbed = _reindent(block, to_tabs)
    return rejects("ambiguous_flexible", src, tabbed, [*tabbed, "\t_trace(0)"], "ambiguous")


SHAPES: dict[str, Maker] = {
    "exact": exact,
    "trailing_ws_dropped": trailing_ws_dropped,
    "trailing_ws_added": trailing_ws_added,
    "indent_dedented": indent_dedented,
    "indent_over": indent_over,
    "tabs_for_spaces": tabs_for_spaces,
    "spaces_for_tabs": spaces_for_tabs,
    "blank_lead": blank_lead,
    "blank_trail": blank_trail,
    "stray_blank": stray_blank,
    "dropped_blank": dropped_blank,
    "elision": elision,
    "crlf": crlf,
    "deletion": deletion,
    "wrong_search": wrong_search,
    "missing_line": missing_line,
    "ambiguous_exact": ambiguous_exact,
    "ambiguous_flexible": ambiguous_flexible,
    # after the older shapes, so that a seed draws the same cases of those as before
    "blank_lead_search_only": blank_lead_search_only,
    "blank_trail_search_only": blank_trail_search_only,
}


def generate(sources: list[Source], *, per_shape: int = 34, seed: int = 12) -> list[Case]:
    """`per_shape` cases of every shape, drawn from `sources` with a seeded generator."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for shape, make in SHAPES.items():
        cases += _draw(rng, sources, shape, make, per_shape)
    return cases


def _draw(
    rng: random.Random, sources: list[Source], shape: str, make: Maker, count: int
) -> Iterator[Case]:
    made = 0
    for _ in range(count * 60):
        src = rng.choice(sources)
        case = make(rng, src)
        if case is not None:
            made += 1
            stem = src.path.removesuffix(".py").replace("/", ".")
            yield case.model_copy(update={"name": f"{shape}-{made:03d}-{stem}"})
        if made == count:
            return


def main(argv: list[str] | None = None) -> int:
    """Generate and print how many cases of each shape came out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None, help="default: the stdlib")
    parser.add_argument("--per-shape", type=int, default=34)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args(argv)
    cases = generate(
        load_sources(args.source or stdlib_dir()), per_shape=args.per_shape, seed=args.seed
    )
    for shape in SHAPES:
        print(f"{shape:<22}{sum(c.shape == shape for c in cases):>5}")
    print(f"{'total':<22}{len(cases):>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
