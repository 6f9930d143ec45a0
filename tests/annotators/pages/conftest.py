"""Fixtures of the rater's page tests: the 3-second floor in force, and a tutorial of ten pairs."""

import pytest

from tests.annotators.pages.helpers import EXPERTS
from tests.factories import TutorialPairFactory


@pytest.fixture(autouse=True)
def _three_seconds(three_second_rules):
    """Every page test plays by the suite's 3-second rules (``tests/conftest.py``)."""


@pytest.fixture
def tutorial():
    return [
        TutorialPairFactory(expert_rating=expert, display_order=index, explanation=f"Because of reason {index}.")
        for index, expert in enumerate(EXPERTS)
    ]
