"""Fixtures of the end-to-end tests that run clio as an ordinary (non-root) user."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.unprivileged import User, ordinary_user, user_tree


@pytest.fixture
def user() -> User:
    """The machine's unprivileged test user (scripts/test-user.sh); the test skips, saying why, without one."""
    found = ordinary_user()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def tree(user: User) -> Any:
    """A project, home and $CLIO_HOME owned by that user, removed afterwards."""
    t = user_tree(user)
    yield t
    t.remove()
