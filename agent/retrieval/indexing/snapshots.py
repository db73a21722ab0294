"""Snapshot files: the test file each records, by the runners' own naming, and the entries it
holds, read as definitions named by their keys — so an outline lists what is recorded, and the
entries a failure names can be shown whole beside the test that checks them."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from agent.retrieval.indexing.symbols import Symbol

SNAPSHOT_KIND = "snapshot"
# node-tap's, jest's and vitest's entries: exports[`key`] = `…`
_EXPORTS_ENTRY = re.compile(r"^exports\[`(?P<key>(?:[^`\\]|\\.)*)`\]\s*=")
# syrupy's (.ambr): `# name: key`, the recorded value, `# ---`
_AMBR_ENTRY = re.compile(r"^# name: (?P<key>\S.*?)\s*$")


def recorded_test_file(path: str) -> str | None:
    """The test file whose recorded output a snapshot file holds, by the runners' own naming:
    node-tap's `tap-snapshots/<test file>.test.cjs`, jest's and vitest's
    `<folder>/__snapshots__/<test file>.snap`, syrupy's `<folder>/__snapshots__/<module>.ambr`;
    None for any other file. A changed snapshot changes what that file's tests expect."""
    pure = PurePosixPath(path.strip("/"))
    parts = pure.parts
    if len(parts) > 1 and parts[0] == "tap-snapshots":
        for suffix in (".test.cjs", ".test.js"):
            if pure.name.endswith(suffix) and len(pure.name) > len(suffix):
                return str(PurePosixPath(*parts[1:-1], pure.name.removesuffix(suffix)))
    if len(parts) > 1 and parts[-2] == "__snapshots__":
        folder = PurePosixPath(*parts[:-2]) if len(parts) > 2 else PurePosixPath()
        if pure.suffix == ".snap" and pure.stem:
            return str(folder / pure.stem)
        if pure.suffix == ".ambr" and pure.stem:
            return str(folder / f"{pure.stem}.py")
    return None


def snapshot_entries(path: str, text: str) -> list[Symbol]:
    """The entries of a snapshot file, in order: each named by its key, from its first line to
    the line before the next entry's (blank lines between them left out)."""
    pattern = _AMBR_ENTRY if path.endswith(".ambr") else _EXPORTS_ENTRY
    lines = text.splitlines()
    starts = [(n, m["key"]) for n, line in enumerate(lines, 1) if (m := pattern.match(line))]
    entries = []
    for i, (start, key) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        while end > start and not lines[end - 1].strip():
            end -= 1
        signature = lines[start - 1].strip()
        entries.append(Symbol(key, key, SNAPSHOT_KIND, start, end, start, signature))
    return entries
