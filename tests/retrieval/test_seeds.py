"""Seeds: named files and tests, and what task text and failure output point at."""

from __future__ import annotations

from pathlib import Path

from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.seeds import Seeds, resolve_seeds
from tests.retrieval.conftest import make_repo

TRACEBACK = """Traceback (most recent call last):
  File "/tmp/cra/wt-17/tests/test_cart.py", line 7, in test_total_applies_discount
    assert cart.total({"apple": 1.0}, "HALF") == 1.2
  File "/tmp/cra/wt-17/shop/cart.py", line 24, in total
    return apply_discount(subtotal, code) * (1 + tax_rate())
AssertionError
"""


def resolve(index: RepoIndex, root: Path, task: str = "", **seeds: object):
    return resolve_seeds(task, Seeds.model_validate(seeds), index, root=root)


def test_named_files_come_first_and_absent_ones_are_missing(
    shop: Path, shop_index: RepoIndex
) -> None:
    found = resolve(
        shop_index, shop, files=["./shop/users.py", "shop/new_module.py", "../outside.py"]
    )
    assert found.files == ["shop/users.py"]
    assert found.missing == ["shop/new_module.py", "../outside.py"]


def test_a_named_test_id_seeds_its_file_and_function(shop: Path, shop_index: RepoIndex) -> None:
    found = resolve(shop_index, shop, tests=["tests/test_cart.py::test_total_applies_discount"])
    assert found.files == ["tests/test_cart.py"]
    assert found.symbols == ["test_total_applies_discount"]


def test_a_failing_tests_subject_seeds_the_file_defining_it(
    shop: Path, shop_index: RepoIndex
) -> None:
    text = "FAILED tests/test_pricing.py::test_apply_discount_ignores_case - assert 9.0 == 10.0"
    found = resolve(shop_index, shop, text=text)
    assert found.files == ["tests/test_pricing.py", "shop/pricing.py"]
    assert found.reasons["shop/pricing.py"] == "defines apply_discount"
    assert "apply_discount" in found.symbols
    # one word is too common a head to be a test's subject
    found = resolve(shop_index, shop, tests=["tests/test_cart.py::test_total_applies_discount"])
    assert found.files == ["tests/test_cart.py"]


def test_traceback_frames_seed_files_and_functions(shop: Path, shop_index: RepoIndex) -> None:
    found = resolve(shop_index, shop, text=TRACEBACK)
    assert found.files == ["tests/test_cart.py", "shop/cart.py"]
    assert found.reasons["shop/cart.py"] == "traceback frame"
    assert found.symbols[:2] == ["test_total_applies_discount", "total"]


def test_paths_and_code_names_in_the_task_are_seeds(shop: Path, shop_index: RepoIndex) -> None:
    task = "In pricing.py, `apply_discount` ignores case; StockLevel.reserveStock is fine."
    found = resolve(shop_index, shop, task)
    assert found.files == ["shop/pricing.py", "shop/inventory.py"]
    assert {"apply_discount", "StockLevel.reserveStock", "reserveStock"} <= set(found.symbols)


def test_plain_words_are_not_symbol_seeds(shop: Path, shop_index: RepoIndex) -> None:
    found = resolve(shop_index, shop, "the total is wrong when a discount applies")
    assert (found.files, found.symbols) == ([], [])


def test_pytest_summary_lines_seed_test_files(shop: Path, shop_index: RepoIndex) -> None:
    text = "FAILED tests/test_pricing.py::test_unknown_code_gives_no_discount - assert 9.0"
    found = resolve(shop_index, shop, text=text)
    assert found.files == ["tests/test_pricing.py"]
    assert found.reasons["tests/test_pricing.py"] == "test id in text"


def test_a_dotted_module_path_in_the_task_seeds_its_file(shop: Path, shop_index: RepoIndex) -> None:
    found = resolve(shop_index, shop, "shop.pricing.apply_discount ignores the code's case")
    assert found.files[0] == "shop/pricing.py"
    assert found.reasons["shop/pricing.py"] == "module path in text"


def test_a_dotted_package_path_seeds_its_init(shop: Path, shop_index: RepoIndex) -> None:
    found = resolve(shop_index, shop, "the docstring of shop.__init__ is stale")
    assert "shop/__init__.py" in found.files


def test_a_dotted_name_that_is_no_module_seeds_no_file(shop: Path, shop_index: RepoIndex) -> None:
    found = resolve(shop_index, shop, "self.items grows without bound; os.path.join is fine")
    assert found.files == []


def test_a_file_line_reference_seeds_the_file_and_the_definition_there(
    shop: Path, shop_index: RepoIndex
) -> None:
    line = next(
        n
        for n, text in enumerate((shop / "shop/cart.py").read_text().splitlines(), 1)
        if "subtotal = sum" in text
    )
    found = resolve(shop_index, shop, f"the tax is applied twice (see cart.py:{line})")
    assert found.files == ["shop/cart.py"]
    assert "Cart.total" in found.symbols


def test_a_dotted_name_a_module_only_re_exports_seeds_where_it_is_defined_first(
    tmp_path: Path, index: RepoIndex
) -> None:
    repo = make_repo(
        tmp_path / "facade",
        {
            "pkg/__init__.py": "",
            "pkg/_impl.py": "def total(xs):\n    return sum(xs) + 1\n",
            "pkg/api.py": "from pkg._impl import total\n\n__all__ = ['total']\n",
        },
    )
    index.update(repo)
    found = resolve(index, repo, "pkg.api.total adds one too many")
    assert found.files[:2] == ["pkg/_impl.py", "pkg/api.py"]
    assert found.reasons["pkg/_impl.py"] == "defines total, which pkg/api.py re-exports"
