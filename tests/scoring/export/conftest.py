"""Fixtures of the export tests."""

import pytest

from tests.scoring.export.export_world import world_build


@pytest.fixture
def world():
    return world_build()
