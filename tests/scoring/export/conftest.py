"""Fixtures of the export tests."""

import importlib.util

import pytest

from tests.conftest import service_missing
from tests.scoring.export.export_world import world_build


@pytest.fixture
def world():
    return world_build()


@pytest.fixture
def load_dataset(monkeypatch, tmp_path):
    """Hugging Face ``datasets.load_dataset`` of a local folder, offline (skipped without it)."""
    if importlib.util.find_spec("datasets") is None:
        service_missing("the datasets package is not installed (requirements-dev.txt)")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a local folder: nothing to fetch
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from datasets import load_dataset as load

    return lambda folder, config: load(str(folder), config, cache_dir=str(tmp_path / "hf-cache"))
