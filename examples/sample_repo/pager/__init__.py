"""Split a list of items into numbered pages."""

from pager.core import page_count, page_items

__all__ = ["page_count", "page_items"]
