"""Page arithmetic: how many pages a list needs, and which items one page holds."""

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def page_count(total: int, per_page: int) -> int:
    """The number of pages needed to show `total` items, `per_page` at a time."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    return total // per_page


def page_items(items: Sequence[T], page: int, per_page: int) -> list[T]:
    """The items on page `page` (1-based); IndexError for a page that does not exist."""
    if page < 1 or page > page_count(len(items), per_page):
        raise IndexError(f"no page {page}")
    start = (page - 1) * per_page
    return list(items[start : start + per_page])
