"""CLIP-S and RefCLIP-S formulas (CLIPScore paper, section 3) against hand computations."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scoring.priming.clipscore import CAPTION_PREFIX, clip_s, harmonic_mean, max_reference_cos, prompt_for, ref_clip_s

REPO = Path(__file__).resolve().parents[3]


def test_parallel_vectors_score_w():
    # cos = 1, so CLIP-S = w * 1
    assert clip_s(np.array([[1.0, 0.0]]), np.array([[2.0, 0.0]])) == pytest.approx([2.5])
    assert clip_s(np.array([[1.0, 0.0]]), np.array([[2.0, 0.0]]), w=2.0) == pytest.approx([2.0])


def test_orthogonal_vectors_score_zero():
    assert clip_s(np.array([[1.0, 0.0]]), np.array([[0.0, 3.0]])) == pytest.approx([0.0])


def test_negative_cosine_is_clipped_to_zero():
    # cos([1, 0], [-1, 0.5]) = -1 / sqrt(1.25) < 0  ->  max(cos, 0) = 0
    assert clip_s(np.array([[1.0, 0.0]]), np.array([[-1.0, 0.5]])) == pytest.approx([0.0])


def test_three_four_five_by_hand():
    # image (3, 4), caption (1, 0): cos = 3 / 5 = 0.6; CLIP-S = 2.5 * 0.6 = 1.5 (w = 2.0: 1.2)
    # image (3, 4), caption (4, 3): cos = 24 / 25 = 0.96; CLIP-S = 2.4
    images = np.array([[3.0, 4.0], [3.0, 4.0]])
    texts = np.array([[1.0, 0.0], [4.0, 3.0]])
    assert clip_s(images, texts) == pytest.approx([1.5, 2.4])
    assert clip_s(images, texts, w=2.0) == pytest.approx([1.2, 1.92])


def test_unnormalised_input_gives_the_same_scores():
    rng = np.random.default_rng(0)
    images, texts = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    unit = clip_s(
        images / np.linalg.norm(images, axis=1, keepdims=True), texts / np.linalg.norm(texts, axis=1)[:, None]
    )
    assert clip_s(7.0 * images, 0.01 * texts) == pytest.approx(unit)


def test_ref_clip_s_is_harmonic_mean_of_scaled_clip_s_and_reference_cosine():
    # CLIP-S = 1.5 (above); refs (0, 1) and (4, 3): cos with (1, 0) = 0 and 0.8, max = 0.8.
    # H-Mean(1.5, 0.8) = 2 * 1.5 * 0.8 / 2.3 = 2.4 / 2.3. (Not w * H-Mean(0.6, 0.8) = 1.714...:
    # the paper averages CLIP-S already scaled by w.)
    refs = [np.array([[0.0, 1.0], [4.0, 3.0]])]
    score = ref_clip_s(np.array([[3.0, 4.0]]), np.array([[1.0, 0.0]]), refs)
    assert score == pytest.approx([2.4 / 2.3])


def test_ref_clip_s_rows_have_their_own_reference_sets():
    images = np.array([[3.0, 4.0], [1.0, 0.0]])
    texts = np.array([[1.0, 0.0], [1.0, 0.0]])
    refs = [np.array([[0.0, 1.0], [4.0, 3.0]]), np.array([[5.0, 0.0]])]
    # row 2: CLIP-S = 2.5 (parallel), reference cos = 1 -> 2 * 2.5 * 1 / 3.5 = 5 / 3.5
    assert ref_clip_s(images, texts, refs) == pytest.approx([2.4 / 2.3, 5 / 3.5])


def test_ref_clip_s_is_zero_when_either_factor_is_zero():
    caption = np.array([[1.0, 0.0]])
    # references all at negative cosine: reference factor max(-1, 0) = 0
    assert ref_clip_s(np.array([[1.0, 0.0]]), caption, [np.array([[-1.0, 0.0]])]) == pytest.approx([0.0])
    # image orthogonal to the caption: CLIP-S = 0, even with a perfect reference
    assert ref_clip_s(np.array([[0.0, 1.0]]), caption, [np.array([[1.0, 0.0]])]) == pytest.approx([0.0])
    assert max_reference_cos(caption, [np.array([[-1.0, 0.0], [0.0, 1.0]])]) == pytest.approx([0.0])


def test_harmonic_mean_by_hand():
    assert harmonic_mean(np.array([1.0, 2.0, 0.0]), np.array([1.0, 6.0, 0.0])) == pytest.approx([1.0, 3.0, 0.0])


def test_zero_vector_scores_zero_instead_of_nan():
    assert clip_s(np.zeros((1, 3)), np.ones((1, 3))) == pytest.approx([0.0])


def test_malformed_inputs_are_rejected():
    with pytest.raises(ValueError, match="empty"):
        ref_clip_s(np.ones((1, 2)), np.ones((1, 2)), [np.zeros((0, 2))])
    with pytest.raises(ValueError, match="reference sets"):
        ref_clip_s(np.ones((2, 2)), np.ones((2, 2)), [np.ones((1, 2))])
    with pytest.raises(ValueError, match="differ in shape"):
        clip_s(np.ones((2, 2)), np.ones((3, 2)))


def test_prompt_is_the_papers_prefix():
    assert CAPTION_PREFIX == "A photo depicts "
    assert prompt_for("a dog on a bench") == "A photo depicts a dog on a bench"


def test_importing_scoring_modules_does_not_import_torch():
    # The web process imports scoring.priming.clipscore; worker code imports clip_checkpoints and
    # clip_scorer, which must stay cheap to import: torch and open_clip load only when a model is built.
    code = (
        "import sys; import scoring.priming.clipscore, scoring.priming.clip_checkpoints, scoring.priming.clip_scorer; "
        "print(sorted(m for m in ('torch', 'open_clip') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
