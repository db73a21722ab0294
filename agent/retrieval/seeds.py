"""Tier-0 seeds: files and symbols a pass names, or that its task and failure output point at."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent.retrieval.indexing.index import RepoIndex

MAX_MINED_FILES = 10  # a deep traceback must not crowd out everything else
MAX_FILES_PER_SYMBOL = 3  # a name defined in more files than this is too common to seed files

_TEST_ID = re.compile(r"(?P<path>[\w./\\-]+\.\w+)::(?P<name>[\w:.]+)")
_PY_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+, in (?P<name>[\w<>]+)')
PATH_PATTERN = re.compile(
    r"(?<![\w@])(?P<path>(?:[\w.\\-]+/)*[\w.-]*\w\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])"
)
_FILE_LINE = re.compile(
    r"(?<![\w@])(?P<path>(?:[\w.\\-]+/)*[\w.-]*\w\.[A-Za-z]\w{0,5}):(?P<line>\d+)"
)
_DOTTED = re.compile(r"(?<![\w./])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){1,8}(?![\w/])")
_BACKTICKED = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`")
_CODE_LIKE = re.compile(
    r"\b(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*\b|\b\w*_\w+\b|\b\w*[a-z0-9][A-Z]\w*\b"
    r"|\b[A-Za-z_]\w*(?=\(\))"
)


class Seeds(BaseModel):
    """What a pass already knows it needs, and text (failure output) to mine for more."""

    model_config = ConfigDict(extra="forbid")

    files: list[str] = Field(default_factory=list)
    symbols: list[str] = Field(default_factory=list)
    # definitions to show whole where their file is shown in part (a step's target symbols):
    # seeds like `symbols`, but no file that defines them is added for them
    whole: list[str] = Field(default_factory=list)
    tests: list[str] = Field(default_factory=list)
    text: str = ""


@dataclass
class ResolvedSeeds:
    """Seeds checked against the repository: files in order, why each, and the ones absent."""

    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def add_file(self, path: str, reason: str) -> None:
        """Keep `path` as a seed (first reason wins)."""
        if path not in self.reasons:
            self.files.append(path)
            self.reasons[path] = reason

    def add_symbol(self, name: str) -> None:
        """Keep `name` as a seed symbol."""
        if name and name not in self.symbols:
            self.symbols.append(name)


def normalize_path(path: str) -> str:
    """A repository-relative POSIX path: backslashes, `./` and `a/`/`b/` diff prefixes removed."""
    clean = path.strip().strip("'\"`").replace("\\", "/")
    clean = re.sub(r"^(?:\./)+", "", clean)
    return posixpath.normpath(clean) if clean else clean


def resolve_seeds(task: str, seeds: Seeds, index: RepoIndex, *, root: Path) -> ResolvedSeeds:
    """Named files and tests first, then what the task text and failure output point at."""
    paths = _PathMatcher([f.path for f in index.files()])
    resolved = ResolvedSeeds()
    for name in seeds.files:
        _add_named(resolved, paths, root, normalize_path(name))
    for test_id in seeds.tests:
        path, _, rest = test_id.partition("::")
        _add_named(resolved, paths, root, normalize_path(path), reason="named test")
        _add_test_symbols(resolved, rest)
    _seed_symbols(resolved, index, seeds.symbols, keep_unknown=True)
    for name in seeds.whole:
        resolved.add_symbol(name)
    mined = ResolvedSeeds()
    for text in (task, seeds.text):
        _mine_locations(mined, paths, text)
        _mine_line_refs(mined, paths, index, text)
        _mine_modules(mined, paths, index, text)
    _seed_symbols(mined, index, _code_names([task, *_backticked(seeds.text)]))
    _seed_symbols(mined, index, _subjects(index, [*resolved.symbols, *mined.symbols]))
    for path in mined.files[:MAX_MINED_FILES]:
        resolved.add_file(path, mined.reasons[path])
    for name in mined.symbols:
        resolved.add_symbol(name)
    return resolved


def _add_named(
    resolved: ResolvedSeeds, paths: _PathMatcher, root: Path, path: str, reason: str = "named"
) -> None:
    """A named file: kept when indexed or present on disk, else recorded as missing."""
    if not path or path in resolved.reasons or path in resolved.missing:
        return
    if path in paths.known or (_inside(root, path) and (root / path).is_file()):
        resolved.add_file(path, reason)
    else:
        resolved.missing.append(path)


def _inside(root: Path, rel: str) -> bool:
    """True when `rel` stays inside `root`."""
    try:
        (root / rel).resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def _add_test_symbols(resolved: ResolvedSeeds, rest: str) -> None:
    """`TestX::test_y[param]` → the seed symbols `TestX.test_y` and `test_y`."""
    parts = [p.split("[", 1)[0] for p in rest.split("::") if p]
    if parts:
        resolved.add_symbol(".".join(parts))
        resolved.add_symbol(parts[-1])


def _mine_locations(mined: ResolvedSeeds, paths: _PathMatcher, text: str) -> None:
    """Test ids, Python traceback frames and file paths in `text`, in order of appearance."""
    for match in _TEST_ID.finditer(text):
        if (found := paths.match(match["path"])) is not None:
            mined.add_file(found, "test id in text")
            _add_test_symbols(mined, match["name"])
    for match in _PY_FRAME.finditer(text):
        if (found := paths.match(match["path"])) is not None:
            mined.add_file(found, "traceback frame")
            if not match["name"].startswith("<"):
                mined.add_symbol(match["name"])
    for match in PATH_PATTERN.finditer(text):
        if (found := paths.match(match["path"])) is not None:
            mined.add_file(found, "path in text")


def _mine_line_refs(mined: ResolvedSeeds, paths: _PathMatcher, index: RepoIndex, text: str) -> None:
    """`path:line` references: the file, and the innermost definition around that line."""
    for match in _FILE_LINE.finditer(text):
        found = paths.match(match["path"])
        if found is None:
            continue
        mined.add_file(found, "file:line in text")
        line = int(match["line"])
        around = [s for s in index.symbols_in(found) if s.start_line <= line <= s.end_line]
        if around:
            mined.add_symbol(max(around, key=lambda s: s.start_line).qualname)


def _mine_modules(mined: ResolvedSeeds, paths: _PathMatcher, index: RepoIndex, text: str) -> None:
    """Dotted module paths (`pkg.sub.module`, `pkg.module.Class.method`) as the module's file:
    the longest prefix of two or more parts that names a `.py` file or package. When the part
    after it names something the module only re-exports, the module it imports that from
    comes first."""
    for match in _DOTTED.finditer(text):
        parts = match.group(0).split(".")
        for k in range(len(parts), 1, -1):
            stem = "/".join(parts[:k])
            found = paths.match(f"{stem}.py") or paths.match(f"{stem}/__init__.py")
            if found is not None:
                if k < len(parts):
                    for origin in _defined_behind(index, found, parts[k]):
                        mined.add_file(origin, f"defines {parts[k]}, which {found} re-exports")
                mined.add_file(found, "module path in text")
                break


def _defined_behind(index: RepoIndex, module: str, name: str) -> list[str]:
    """The files `module` imports that define `name`, when `module` does not define it."""
    if any(s.name == name for s in index.symbols_in(module)):
        return []
    imported = {dst for src, dst in index.import_edges([module]) if src == module}
    return sorted({s.path for s in index.symbols_named([name]) if s.path in imported})


def _backticked(text: str) -> list[str]:
    """The `code` spans of failure output (its bare words are too noisy to mine)."""
    return [f"`{m}`" for m in _BACKTICKED.findall(text)]


def _code_names(texts: list[str]) -> list[str]:
    """Code-like names in `texts` (backticked, dotted, snake_case, camelCase, `call()`)."""
    candidates: list[str] = []
    for text in texts:
        candidates += _BACKTICKED.findall(text)
        candidates += _CODE_LIKE.findall(text)
    return list(dict.fromkeys(part for c in candidates for part in _name_forms(c)))


def _seed_symbols(
    target: ResolvedSeeds, index: RepoIndex, names: list[str], *, keep_unknown: bool = False
) -> None:
    """Keep the names the index defines (all of them when `keep_unknown`); the defining files
    become seeds when a name is defined in few enough files."""
    defined: dict[str, list[str]] = defaultdict(list)
    for symbol in index.symbols_named(names) if names else []:
        for key in (symbol.name, symbol.qualname):
            if symbol.path not in defined[key]:
                defined[key].append(symbol.path)
    for name in names:
        files = defined.get(name, [])
        if files or keep_unknown:
            target.add_symbol(name)
        if 0 < len(files) <= MAX_FILES_PER_SYMBOL:
            for path in files:
                target.add_file(path, f"defines {name}")


def _subjects(index: RepoIndex, names: list[str]) -> list[str]:
    """What tests named `test_get_help_option_names` or `TestHelpOption.test_names_order`
    test, by the convention of naming a test after its subject: the longest head of the name
    after `test_` (two words at least, or the whole name) that the index defines."""
    found: list[str] = []
    for name in names:
        last = name.rsplit(".", 1)[-1]
        if not last.startswith("test_"):
            continue
        words = last.removeprefix("test_").split("_")
        heads = ["_".join(words[:n]) for n in range(len(words), 1, -1)] or ["_".join(words)]
        defined = {s.name for s in index.symbols_named(heads)} if heads[0] else set()
        found += [h for h in heads if h in defined][:1]
    return list(dict.fromkeys(found))


def _name_forms(candidate: str) -> list[str]:
    """`pkg.mod.Class.method` → ["pkg.mod.Class.method", "Class.method", "method"]."""
    parts = candidate.strip(".").split(".")
    forms = [".".join(parts)]
    if len(parts) > 1:
        forms += [".".join(parts[-2:]), parts[-1]]
    return [f for f in forms if f and not f[0].isdigit()]


class _PathMatcher:
    """Maps paths as written in text (absolute, prefixed, bare names) to indexed paths."""

    def __init__(self, known: list[str]) -> None:
        self.known = set(known)
        self._by_name: dict[str, list[str]] = defaultdict(list)
        for path in known:
            self._by_name[posixpath.basename(path)].append(path)

    def match(self, written: str) -> str | None:
        """The indexed path `written` refers to, or None when unknown or ambiguous."""
        path = normalize_path(written)
        if path in self.known:
            return path
        for prefix in ("a/", "b/"):
            if path.startswith(prefix) and path[2:] in self.known:
                return path[2:]
        same_name = self._by_name.get(posixpath.basename(path), [])
        inside = [p for p in same_name if path.endswith("/" + p)]
        if inside:
            return max(inside, key=len)  # /tmp/wt/calc/ops.py → calc/ops.py
        below = [p for p in same_name if p.endswith("/" + path)]
        return below[0] if len(below) == 1 else None
