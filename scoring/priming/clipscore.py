"""CLIP-S and RefCLIP-S on precomputed embeddings (SPEC section 4). numpy only.

Formulas from Hessel et al., "CLIPScore: A Reference-free Evaluation Metric for Image
Captioning" (EMNLP 2021), section 3 (seeds/001):

    CLIP-S(c, v)       = w * max(cos(c, v), 0)                                  w = 2.5
    RefCLIP-S(c, R, v) = H-Mean(CLIP-S(c, v), max(max_{r in R} cos(c, r), 0))

The harmonic mean takes CLIP-S *already scaled by w* and the unscaled reference cosine: the
paper keeps the weighting inside RefCLIP-S on purpose (appendix B, "when computing
RefCLIPScore, we maintain this weighting"), and the reference code does the same
(jmhessel/clipscore, clipscore.py: `2 * per_instance_image_text * per_instance_text_text /
(per_instance_image_text + per_instance_text_text)` with the first factor being CLIP-S).
PAC-S uses the same two formulas on fine-tuned weights, with w = 2.0 (SPEC section 4;
aimagelab/pacscore compute_metrics.py `PACScore(..., w=2.0)`).

This module is imported by the web process: it must never import torch or open_clip.
"""

from collections.abc import Sequence

import numpy as np

CLIP_S_W = 2.5
PAC_S_W = 2.0

# The paper's recommended prompt ("A photo depicts"); the reference code appends one space
# and prefixes references with it too.
CAPTION_PREFIX = "A photo depicts "


def prompt_for(caption: str) -> str:
    """The text actually encoded for a caption or a reference: the CLIPScore prompt + caption."""
    return CAPTION_PREFIX + caption


def _unit_rows(features: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[np.newaxis, :]
    if x.ndim != 2:
        raise ValueError(f"{name}: expected a (n, d) array, got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    # A zero vector has no direction: its cosine with anything is taken as 0 (the floor of
    # both scores) instead of producing NaN from 0/0.
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _rowwise_cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.shape != b.shape:
        raise ValueError(f"image and text features differ in shape: {a.shape} vs {b.shape}")
    return np.einsum("ij,ij->i", a, b)


def cosine(image_features: np.ndarray, text_features: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two (n, d) arrays (L2-normalised here)."""
    return _rowwise_cos(_unit_rows(image_features, "image_features"), _unit_rows(text_features, "text_features"))


def clip_s(image_features: np.ndarray, text_features: np.ndarray, w: float = CLIP_S_W) -> np.ndarray:
    """CLIP-S per row: `w * max(cos(E_img, E_txt), 0)` (CLIPScore paper, section 3).

    Inputs are (n, d) embeddings (or single d-vectors) and need not be normalised; returns (n,).
    """
    return w * np.maximum(cosine(image_features, text_features), 0.0)


def max_reference_cos(text_features: np.ndarray, reference_features: Sequence[np.ndarray]) -> np.ndarray:
    """Per row, `max(max_r cos(E_txt(c), E_txt(r)), 0)`: the reference factor of RefCLIP-S."""
    texts = _unit_rows(text_features, "text_features")
    if len(reference_features) != len(texts):
        raise ValueError(f"{len(texts)} captions but {len(reference_features)} reference sets")
    out = np.empty(len(texts))
    for i, refs in enumerate(reference_features):
        r = _unit_rows(refs, f"reference_features[{i}]")
        if r.shape[0] == 0:
            # RefCLIP-S is defined over a non-empty reference set; without references the
            # caller should use CLIP-S alone.
            raise ValueError(f"reference_features[{i}] is empty")
        if r.shape[1] != texts.shape[1]:
            raise ValueError(f"reference_features[{i}] has dimension {r.shape[1]}, captions have {texts.shape[1]}")
        out[i] = max(float(np.max(r @ texts[i])), 0.0)
    return out


def harmonic_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise `2ab / (a + b)` for a, b >= 0, and 0 where either is 0 (no 0/0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    total = a + b
    both = (a > 0) & (b > 0)
    return np.divide(2.0 * a * b, total, out=np.zeros_like(total), where=both)


def ref_clip_s(
    image_features: np.ndarray,
    text_features: np.ndarray,
    reference_features: Sequence[np.ndarray],
    w: float = CLIP_S_W,
) -> np.ndarray:
    """RefCLIP-S per row: H-Mean(CLIP-S(c, v), max(max_r cos(c, r), 0)) (CLIPScore paper, section 3).

    `reference_features` holds one (k_i, d) array of reference embeddings per row (k_i >= 1).
    CLIP-S enters the harmonic mean already multiplied by w, as in the paper and its code.
    The result is 0 when either factor is 0.
    """
    return harmonic_mean(clip_s(image_features, text_features, w), max_reference_cos(text_features, reference_features))
