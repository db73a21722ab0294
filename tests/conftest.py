"""Shared fixtures: the real PostgreSQL and Redis services when CI names them."""

from __future__ import annotations

import os

import pytest


def _service_url(var: str, what: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.skip(f"{what} tests need {var} (set by .ci/run); skipped locally")
    return url


@pytest.fixture
def postgres_url() -> str:
    """The PostgreSQL URL from CRA_TEST_POSTGRES_URL; skipped when unset, never when set."""
    return _service_url("CRA_TEST_POSTGRES_URL", "PostgreSQL")


@pytest.fixture
def redis_url() -> str:
    """The Redis URL from CRA_TEST_REDIS_URL; skipped when unset, never when set."""
    return _service_url("CRA_TEST_REDIS_URL", "Redis")
