"""RepoIndex on real repositories: symbols, imports, search, incremental updates, odd files."""

from __future__ import annotations

import json
from pathlib import Path

from agent.cli.main import main
from agent.config.files import RetrievalConfig
from agent.git import repo as git
from agent.git import worktrees
from agent.retrieval.indexing.index import RepoIndex, default_index_path
from tests.fakes.repos import git_in, write_files
from tests.retrieval.conftest import SHOP_FILES, commit_all, make_repo


def paths_of(index: RepoIndex) -> list[str]:
    return [f.path for f in index.files()]


def test_first_update_parses_every_tracked_file(shop: Path, index: RepoIndex) -> None:
    stats = index.update(shop)
    assert (stats.files, stats.parsed, stats.reused, stats.removed) == (
        len(SHOP_FILES),
        len(SHOP_FILES),
        0,
        0,
    )
    assert stats.languages == {"markdown": 1, "python": len(SHOP_FILES) - 1}
    assert paths_of(index) == sorted(SHOP_FILES)


def test_python_symbols_carry_kind_span_signature_and_docstring(shop_index: RepoIndex) -> None:
    found = {s.qualname: s for s in shop_index.symbols_in("shop/cart.py")}
    assert list(found) == [
        "Cart",
        "Cart.__init__",
        "Cart.add_item",
        "Cart.remove_item",
        "Cart.total",
    ]
    add_item = found["Cart.add_item"]
    assert (add_item.kind, add_item.start_line, add_item.end_line) == ("method", 12, 14)
    assert add_item.signature == "def add_item(self, sku: str, quantity: int = 1) -> None:"
    assert add_item.doc == "Put `quantity` of `sku` in the cart."
    assert found["Cart"].kind == "class"
    assert shop_index.file("shop/cart.py").doc == "The shopping cart."  # type: ignore[union-attr]


def test_imports_resolve_to_files(shop_index: RepoIndex) -> None:
    assert ("shop/cart.py", "shop/pricing.py") in shop_index.import_edges(["shop/pricing.py"])
    assert ("tests/test_cart.py", "shop/cart.py") in shop_index.import_edges(["shop/cart.py"])


def test_relative_and_src_layout_imports_resolve(tmp_path: Path, index: RepoIndex) -> None:
    repo = make_repo(
        tmp_path / "r",
        {
            "src/pkg/__init__.py": "from . import core\n",
            "src/pkg/core.py": "from .util import helper\n",
            "src/pkg/util.py": "def helper():\n    return 1\n",
            "app.js": "import { x } from './lib/x';\nconst y = require('./y.js');\n",
            "lib/x.js": "export const x = 1;\n",
            "y.js": "module.exports = 2;\n",
        },
    )
    index.update(repo)
    edges = index.import_edges(["src/pkg/core.py", "app.js"])
    assert ("src/pkg/__init__.py", "src/pkg/core.py") in edges
    assert ("src/pkg/core.py", "src/pkg/util.py") in edges
    assert ("app.js", "lib/x.js") in edges
    assert ("app.js", "y.js") in edges


def test_search_splits_snake_and_camel_case(shop_index: RepoIndex) -> None:
    assert shop_index.search(["reserve", "stock"], limit=3)[0][0] == "shop/inventory.py"
    assert shop_index.search(["hash", "password"], limit=3)[0][0] == "shop/users.py"
    assert shop_index.search(["tax", "rate"], limit=1)[0][0] == "shop/pricing.py"


def test_unchanged_repository_parses_nothing(shop: Path, shop_index: RepoIndex) -> None:
    stats = shop_index.update(shop)
    assert (stats.parsed, stats.reused, stats.removed) == (0, len(SHOP_FILES), 0)


def test_reindex_after_one_change_parses_only_that_file(shop: Path, shop_index: RepoIndex) -> None:
    write_files(
        shop,
        {
            "shop/pricing.py": SHOP_FILES["shop/pricing.py"]
            + "\n\ndef shipping_cost(weight: float) -> float:\n    return 5.0\n"
        },
    )
    commit_all(shop, "shipping")
    stats = shop_index.update(shop)
    assert (stats.parsed, stats.reused) == (1, len(SHOP_FILES) - 1)
    assert "shipping_cost" in [s.name for s in shop_index.symbols_in("shop/pricing.py")]
    assert ("shop/cart.py", "shop/pricing.py") in shop_index.import_edges(["shop/pricing.py"])


def test_uncommitted_edit_is_indexed_as_it_is_on_disk(shop: Path, shop_index: RepoIndex) -> None:
    write_files(shop, {"shop/users.py": "def log_out(user):\n    return None\n"})
    stats = shop_index.update(shop)
    assert stats.parsed == 1
    assert [s.name for s in shop_index.symbols_in("shop/users.py")] == ["log_out"]


def test_deleted_file_disappears(shop: Path, shop_index: RepoIndex) -> None:
    git_in(shop, "rm", "--quiet", "shop/users.py")
    commit_all(shop, "no users")
    stats = shop_index.update(shop)
    assert stats.removed == 1
    assert "shop/users.py" not in paths_of(shop_index)
    assert shop_index.symbols_named(["authenticate"]) == []
    assert shop_index.search(["authenticate"], limit=5) == []


def test_odd_files_are_skipped_capped_or_indexed_as_text(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "odd",
        {
            "ok.py": "def fine():\n    return 1\n",
            "broken.py": "def broken(:\n    pass\n",
            "huge.py": "x = 1\n" * 400,
            "node_modules/lib/index.js": "module.exports = 1;\n",
            "static/app.min.js": "var a=1;\n",
        },
    )
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (repo / "latin.py").write_bytes("# caf\xe9\ndef menu():\n    return 'ok'\n".encode("latin-1"))
    commit_all(repo, "odd files")
    config = RetrievalConfig(max_file_bytes=1000)
    with RepoIndex.open(tmp_path / "odd.sqlite", config=config) as index:
        stats = index.update(repo)
        assert stats.skipped == {"binary": 1, "generated": 1, "vendored": 1}
        assert (stats.syntax_errors, stats.capped) == (1, 1)
        assert paths_of(index) == ["broken.py", "huge.py", "latin.py", "ok.py"]
        assert index.search(["broken"], limit=1)[0][0] == "broken.py"
        assert [s.name for s in index.symbols_in("latin.py")] == ["menu"]
        assert index.file("huge.py").status == "capped"  # type: ignore[union-attr]


def test_changed_skip_rules_rebuild_the_index(shop: Path, tmp_path: Path) -> None:
    db = tmp_path / "rules.sqlite"
    with RepoIndex.open(db) as index:
        index.update(shop)
    with RepoIndex.open(db, config=RetrievalConfig(skip_dirs=["tests"])) as index:
        stats = index.update(shop)
        assert stats.parsed == len(SHOP_FILES) - 3
        assert stats.skipped == {"vendored": 3}


def test_worktrees_of_one_repository_share_an_index_file(shop: Path, tmp_path: Path) -> None:
    worktree = worktrees.add_worktree(
        shop, tmp_path / "wt", commit=git.head_commit(shop), branch="cra/x"
    )
    data = tmp_path / "data"
    assert default_index_path(data, worktree) == default_index_path(data, shop)
    assert default_index_path(data, shop).parent == data / "index"


def test_cra_index_prints_the_stats(shop: Path, tmp_path: Path, capsys) -> None:
    assert main(["--data-dir", str(tmp_path / "data"), "index", "--repo", str(shop)]) == 0
    text = capsys.readouterr().out
    assert f"files: {len(SHOP_FILES)} ({len(SHOP_FILES)} parsed" in text
    assert "languages: python 8, markdown 1" in text
    assert main(["--data-dir", str(tmp_path / "data"), "index", "--repo", str(shop), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["files"], stats["parsed"], stats["reused"]) == (9, 0, 9)


def test_cra_index_outside_a_repository_is_a_usage_error(tmp_path: Path, capsys) -> None:
    assert main(["--data-dir", str(tmp_path / "data"), "index", "--repo", str(tmp_path)]) == 2
    assert "not a git repository" in capsys.readouterr().err
