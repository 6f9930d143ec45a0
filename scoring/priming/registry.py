"""The priming scorers of SPEC section 4, ordered from least to most trusted, and the models a
worker loads.

``SCORERS`` is the one ordered list: CLIP-S or PAC-S (whichever weights are configured; the
same formula), then RefCLIP-S (the same model, also reading the pair's reference captions),
then FLEUR and RefFLEUR (a LLaVA model, when one is configured), then the learned predictor
(active only once it beat calibrated CLIP-S on held-out ratings). For each pair, the most
trusted scorer that applies fills slot 2 (the prime kept longest) and the next one slot 1
(``scoring.priming.runner``). Adding a scorer is its own module (a class following
``scoring.priming.scorer.Scorer``) plus its place in this list. A stored prime names its scorer
by the scorer's ``metric``, an identifier this registry checks when the prime is written
(``metric_checked``), as pretix stores an exporter's identifier: a new scorer needs no migration.

Why FLEUR and RefFLEUR sit there. Above the CLIP family: in the FLEUR paper's Table 1 (seed
002) FLEUR matches or beats CLIP-S, RefCLIP-S and PAC-S in agreement with human judgement on
every benchmark but Flickr8k-Expert (tau_c: FLEUR 53.0, RefCLIP-S 53.0, CLIP-S 51.2, PAC-S
54.3; COMPOSITE: 63.5 against 55.4, 53.8, 55.7; Pascal-50S: 83.2 against 83.1, 80.7, 82.4),
and RefFLEUR, which also reads the references, does better still on COMPOSITE (64.2) and
Pascal-50S (85.5), as RefCLIP-S sits above CLIP-S. Below the learned predictor: it is the
only scorer checked on this project's own held-out ratings (and is used only after beating
calibrated CLIP-S there), while FLEUR's figures come from other datasets and scales.

What one worker has configured, and the models it has loaded, are
``scoring.priming.configuration``'s.
"""

from __future__ import annotations

from scoring.priming.clip_metrics import ClipS, PacS, RefClipS
from scoring.priming.fleur_metrics import Fleur, RefFleur
from scoring.priming.model_vicr import LearnedPredictor
from scoring.priming.scorer import Scorer

SCORERS: tuple[type[Scorer], ...] = (ClipS, PacS, RefClipS, Fleur, RefFleur, LearnedPredictor)

# The demo's primes: not a model's, but the level each demo caption was written for.
DEMO_METRIC = "demo"

# What a stored prime may name, with its name for people: every scorer's metric, and the demo's.
METRIC_LABELS: dict[str, str] = {scorer.metric: scorer.label for scorer in SCORERS} | {
    DEMO_METRIC: "Demo (the level the caption was written for)"
}

# Metrics whose primes may carry the model's explanation (``ModelRating.explanation``).
EXPLAINED_METRICS = frozenset(scorer.metric for scorer in SCORERS if scorer.explains)


def metric_checked(metric: str) -> str:
    """``metric``, when a stored prime may name it; raises ValueError otherwise (every writer of a
    prime calls this: a prime naming no scorer could be neither calibrated nor shown)."""
    if metric not in METRIC_LABELS:
        raise ValueError(f"no priming scorer produces the metric {metric!r}: one of {', '.join(METRIC_LABELS)}")
    return metric


def metric_label(metric: str) -> str:
    """The people's name of a stored prime's metric (the identifier itself for one no longer known)."""
    return METRIC_LABELS.get(metric, metric)


def scorer_class(metric: str) -> type[Scorer]:
    """The registry entry of ``metric``; raises KeyError for a metric no scorer produces."""
    for scorer in SCORERS:
        if scorer.metric == metric:
            return scorer
    raise KeyError(f"no priming scorer produces the metric {metric!r}")
