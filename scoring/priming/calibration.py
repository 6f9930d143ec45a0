"""Raw model scores -> the 1-5 rating scale through a monotone map (SPEC section 4).

Pure numpy/sklearn, no Django import. A calibration is a piecewise-linear increasing map
given by knots (x_knots, y_knots): ``np.interp`` between knots, clipped to the end values
outside them, then to [1, 5].

- Default map, used until ``MIN_PAIRS_FOR_FIT`` validated pairs exist: linear from a raw
  CLIP-S of ``DEFAULT_RAW_RANGE[0]`` (rating 1) to ``DEFAULT_RAW_RANGE[1]`` (rating 5),
  clipped. Why [0.5, 1.0]: CLIPScore multiplies the cosine by w = 2.5 to "stretch the
  distribution to more uniformly span between zero and one" (Hessel et al. 2021,
  Appendix B). Image-caption cosines of CLIP ViT-B/32 lie mostly around 0.2-0.4 (their
  Figure 4; the figure is not in our text copy, so this range is an assumption), i.e. a
  CLIP-S of 0.5-1.0; below 0.5 a caption is treated as unrelated (rating 1). The same
  map is used for RefCLIP-S and PAC-S until a fit replaces it.
- FLEUR and RefFLEUR: linear from 0.0 (rating 1) to 1.0 (rating 5) (``unit_knots``). The
  model rates on 0.0-1.0 with grading criteria whose ends are the scale's ends: 0.0 "does not
  describe the image at all" (VICR's 1: the wrong idea of the image), 1.0 "accurately and
  clearly describes the image" (VICR's 5: everything right).
- Fitted map: isotonic regression (sklearn ``IsotonicRegression``, increasing, bounded to
  [1, 5]) of the mean human rating on the raw score, over pairs with >= 3 non-excluded
  human ratings. Its thresholds are exactly the knots: sklearn predicts by linear
  interpolation between them and clips outside (``out_of_bounds="clip"``).
"""

from collections.abc import Sequence

import numpy as np

RATING_MIN, RATING_MAX = 1.0, 5.0
DEFAULT_RAW_RANGE = (0.5, 1.0)
MIN_PAIRS_FOR_FIT = 200


def default_knots() -> tuple[list[float], list[float]]:
    """The documented default map: raw DEFAULT_RAW_RANGE -> [1, 5], linear, clipped outside."""
    low, high = DEFAULT_RAW_RANGE
    return [low, high], [RATING_MIN, RATING_MAX]


def unit_knots() -> tuple[list[float], list[float]]:
    """For raw scores on [0, 1] whose ends are the scale's ends (FLEUR): 0 -> 1, 1 -> 5, linear."""
    return [0.0, 1.0], [RATING_MIN, RATING_MAX]


def identity_knots() -> tuple[list[float], list[float]]:
    """For scores already on the 1-5 scale (the learned predictor): clip to [1, 5] only."""
    return [RATING_MIN, RATING_MAX], [RATING_MIN, RATING_MAX]


def apply_knots(raw: Sequence[float] | np.ndarray, x_knots: Sequence[float], y_knots: Sequence[float]) -> np.ndarray:
    """Calibrated ratings of raw scores: piecewise-linear through the knots, clipped to [1, 5]."""
    x = np.asarray(x_knots, dtype=float)
    y = np.asarray(y_knots, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or len(x) == 0:
        raise ValueError("x_knots and y_knots must be non-empty 1-d sequences of the same length")
    if np.any(np.diff(x) < 0) or np.any(np.diff(y) < 0):
        raise ValueError("knots must be non-decreasing (a calibration is monotone)")
    values = np.interp(np.asarray(raw, dtype=float), x, y)
    return np.clip(values, RATING_MIN, RATING_MAX)


def fit_isotonic(raw: Sequence[float], target: Sequence[float]) -> tuple[list[float], list[float]]:
    """Knots of the isotonic regression of ``target`` (mean human rating) on ``raw``.

    Increasing, bounded to [1, 5]; ``apply_knots`` with the result equals the fitted
    regressor's ``predict`` (linear between thresholds, clipped outside).
    """
    raw = np.asarray(raw, dtype=float)
    target = np.asarray(target, dtype=float)
    if raw.shape != target.shape or raw.ndim != 1 or len(raw) < 2:
        raise ValueError("raw and target must be 1-d of the same length, at least 2")
    # Imported here, where a fit runs: the scorer registry imports this module, and so does the
    # web process (the admin names the metrics), which never fits and need not load sklearn.
    from sklearn.isotonic import IsotonicRegression

    regression = IsotonicRegression(increasing=True, y_min=RATING_MIN, y_max=RATING_MAX, out_of_bounds="clip")
    regression.fit(raw, target)
    return regression.X_thresholds_.tolist(), regression.y_thresholds_.tolist()


def choose_knots(raw: Sequence[float], target: Sequence[float]) -> tuple[str, list[float], list[float]]:
    """("isotonic", knots) with at least MIN_PAIRS_FOR_FIT pairs, else ("default", default knots)."""
    if len(raw) >= MIN_PAIRS_FOR_FIT:
        return ("isotonic", *fit_isotonic(raw, target))
    return ("default", *default_knots())
