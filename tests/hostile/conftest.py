"""The bot the catalogue's door attacks are delivered to: tests/e2e's, shared."""

from tests.e2e.conftest import world

__all__ = ["world"]
