"""Model folders shared by the priming tests (built once per session, nothing downloaded)."""

import pytest


@pytest.fixture(scope="session")
def tiny_llava_dir(tmp_path_factory):
    """A tiny LLaVA whose greedy answer to a FLEUR prompt is "0.85" (tests/scoring/priming/tiny_llava.py)."""
    pytest.importorskip("transformers", reason="transformers is not installed (FLEUR runs on worker machines)")
    from tests.scoring.priming.tiny_llava import save_tiny_llava

    return save_tiny_llava(tmp_path_factory.mktemp("fleur") / "tiny-llava")


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    """A tiny random open_clip model saved as a checkpoint folder (what RATINGGAME_PRIMING_MODEL names)."""
    from tests.scoring.priming.tiny_clip import save_tiny_clip_dir

    return save_tiny_clip_dir(tmp_path_factory.mktemp("priming") / "tiny-clip")


@pytest.fixture
def priming(settings, tiny_dir):
    """The tiny model configured as the site's priming model, loaded afresh for the test."""
    from scoring.priming.configuration import loaded_models_clear

    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": str(tiny_dir), "PRIMING_PRETRAINED": ""}
    loaded_models_clear()
    yield settings
    loaded_models_clear()
