"""Model folders shared by the priming tests (built once per session, nothing downloaded)."""

import pytest


@pytest.fixture(scope="session")
def tiny_llava_dir(tmp_path_factory):
    """A tiny LLaVA whose greedy answer to a FLEUR prompt is "0.85" (tests/scoring/priming/tiny_llava.py)."""
    pytest.importorskip("transformers", reason="transformers is not installed (FLEUR runs on worker machines)")
    from tests.scoring.priming.tiny_llava import save_tiny_llava

    return save_tiny_llava(tmp_path_factory.mktemp("fleur") / "tiny-llava")
