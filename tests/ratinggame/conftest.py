"""Fixtures of the game's tests."""

import pytest

from tests.factories import UserFactory


@pytest.fixture
def staff_client(client):
    """The test client signed in as a superuser (the Django admin's pages)."""
    client.force_login(UserFactory(username="boss", is_staff=True, is_superuser=True))
    return client
