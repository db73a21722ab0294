"""The catalogue in tests/hostile/README.md and the attack tests kept in step."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.hostile.answers import PYTEST_PATCHES, WEAKENINGS
from tests.hostile.test_untrusted_input import LABELED, MODEL_GARBAGE

HERE = Path(__file__).parent
README = (HERE / "README.md").read_text(encoding="utf-8")
LISTED = re.compile(r"`(test_\w+\.py)::(test_\w+)`")


def listed() -> set[str]:
    return {f"{module}::{test}" for module, test in LISTED.findall(README)}


def written() -> set[str]:
    """Every test function of the catalogue's modules, as module::name."""
    tests = set()
    for module in sorted(HERE.glob("test_*.py")):
        if module.name == Path(__file__).name:
            continue
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                tests.add(f"{module.name}::{node.name}")
    return tests


def test_every_listed_attack_has_its_test() -> None:
    assert sorted(listed() - written()) == []


def test_every_test_of_the_catalogue_is_listed() -> None:
    assert sorted(written() - listed()) == []


def test_every_test_is_named_for_an_attack_or_its_control() -> None:
    assert [name for name in written() if not re.search(r"::test_(attack|control)_", name)] == []


@pytest.mark.parametrize(
    ("test", "variants"),
    [
        ("test_attack_weakened_test_is_refused_and_the_real_fix_lands", WEAKENINGS),
        ("test_attack_package_code_patching_pytest_is_refused", PYTEST_PATCHES),
        ("test_attack_hostile_field_in_a_signed_delivery_is_422_with_no_run", LABELED),
        (
            "test_attack_model_answering_garbage_fails_the_run_honestly_with_nothing_pushed",
            MODEL_GARBAGE,
        ),
    ],
)
def test_every_named_variant_of_an_attack_is_listed_in_its_row(
    test: str, variants: dict[str, object]
) -> None:
    [row] = [line for line in README.splitlines() if f"::{test}`" in line]
    assert [name for name in variants if name not in row] == []
