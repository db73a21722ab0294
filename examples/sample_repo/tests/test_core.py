import pytest
from pager import page_count, page_items


def test_full_pages():
    assert page_count(10, 5) == 2


def test_no_items_no_pages():
    assert page_count(0, 5) == 0


def test_first_page():
    assert page_items(list(range(11)), 1, 5) == [0, 1, 2, 3, 4]


def test_per_page_must_be_positive():
    with pytest.raises(ValueError):
        page_count(3, 0)
