"""Shared fixtures: a small real shop repository, its index, and a scripted classifier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.config.files import ModelConfig
from agent.llm.client import HTTPChatModel
from agent.llm.logged import LoggedLLMClient
from agent.retrieval.indexing.index import RepoIndex
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV, git_in, init_repo, write_files

CART_PY = '''"""The shopping cart."""

from shop.pricing import apply_discount, tax_rate


class Cart:
    """Items a customer is about to buy."""

    def __init__(self) -> None:
        self.items: dict[str, int] = {}

    def add_item(self, sku: str, quantity: int = 1) -> None:
        """Put `quantity` of `sku` in the cart."""
        self.items[sku] = self.items.get(sku, 0) + quantity

    def remove_item(self, sku: str) -> None:
        """Take `sku` out of the cart."""
        self.items.pop(sku, None)

    def total(self, prices: dict[str, float], code: str | None = None) -> float:
        """The price of everything in the cart, discounted and taxed."""
        subtotal = sum(prices[sku] * n for sku, n in self.items.items())
        return apply_discount(subtotal, code) * (1 + tax_rate())
'''
PRICING_PY = '''"""Discounts and taxes."""

DISCOUNTS = {"SAVE10": 0.10, "HALF": 0.50}


def apply_discount(amount: float, code: str | None) -> float:
    """`amount` with the discount of `code` taken off."""
    return amount * (1 - DISCOUNTS.get(code or "", 0.0))


def tax_rate() -> float:
    """The sales tax rate."""
    return 0.2
'''
INVENTORY_PY = '''"""Stock levels of the warehouse."""


class StockLevel:
    """How many of each product are on the shelves."""

    def __init__(self) -> None:
        self.on_hand: dict[str, int] = {}

    def reserveStock(self, sku: str, quantity: int) -> bool:
        """Hold `quantity` of `sku` for an order; False when there are too few."""
        if self.on_hand.get(sku, 0) < quantity:
            return False
        self.on_hand[sku] -= quantity
        return True
'''
USERS_PY = '''"""Customer accounts."""

import hashlib


def hash_password(password: str) -> str:
    """The stored form of a password."""
    return hashlib.sha256(password.encode()).hexdigest()


def authenticate(users: dict[str, str], name: str, password: str) -> bool:
    """True when `password` is the password of `name`."""
    return users.get(name) == hash_password(password)
'''
TEST_CART_PY = """from shop.cart import Cart


def test_total_applies_discount():
    cart = Cart()
    cart.add_item("apple", 2)
    assert cart.total({"apple": 1.0}, "HALF") == 1.2
"""
TEST_PRICING_PY = """from shop.pricing import apply_discount


def test_unknown_code_gives_no_discount():
    assert apply_discount(10.0, "NOPE") == 10.0
"""
SHOP_FILES = {
    "README.md": "# shop\n\nA tiny shop: carts, pricing, inventory and users.\n",
    "shop/__init__.py": '"""A tiny shop."""\n',
    "shop/cart.py": CART_PY,
    "shop/pricing.py": PRICING_PY,
    "shop/inventory.py": INVENTORY_PY,
    "shop/users.py": USERS_PY,
    "tests/__init__.py": "",
    "tests/test_cart.py": TEST_CART_PY,
    "tests/test_pricing.py": TEST_PRICING_PY,
}


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)


def make_repo(root: Path, files: dict[str, str]) -> Path:
    """A repository at `root` with `files` committed."""
    init_repo(root)
    write_files(root, files)
    commit_all(root, "initial")
    return root


def commit_all(root: Path, message: str) -> None:
    """Stage everything and commit."""
    git_in(root, "add", "--all")
    git_in(root, "commit", "--quiet", "--no-verify", "--allow-empty", "-m", message)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """The shop repository, committed."""
    return make_repo(tmp_path / "shop", SHOP_FILES)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[RepoIndex]:
    """An empty index file, closed after the test."""
    with RepoIndex.open(tmp_path / "index" / "shop.sqlite") as opened:
        yield opened


@pytest.fixture
def shop_index(shop: Path, index: RepoIndex) -> RepoIndex:
    """The index of the shop repository."""
    index.update(shop)
    return index


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as running:
        yield running


@pytest.fixture
def call_log() -> MemoryCallLog:
    return MemoryCallLog()


@pytest.fixture
def classifier(server: ScriptedModelServer, call_log: MemoryCallLog) -> Iterator[LoggedLLMClient]:
    """The classifier role's client, talking to the scripted server."""
    config = ModelConfig(model="judge", base_url=server.url, max_retries=0, context_window=8192)
    with HTTPChatModel(config) as model:
        yield LoggedLLMClient(model, call_log, role="classifier", reserved_tokens=512)
