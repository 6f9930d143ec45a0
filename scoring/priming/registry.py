"""The priming scorers of SPEC section 4, ordered from least to most trusted, and the models a
worker loads.

``SCORERS`` is the one ordered list: CLIP-S or PAC-S (whichever weights are configured; the
same formula), then RefCLIP-S (the same model, also reading the pair's reference captions),
then FLEUR and RefFLEUR (a LLaVA model, when one is configured), then the learned predictor
(active only once it beat calibrated CLIP-S on held-out ratings). For each pair, the most
trusted scorer that applies fills slot 2 (the prime kept longest) and the next one slot 1
(``scoring.priming.runner``). Adding a scorer is its own module (a class following
``scoring.priming.scorer.Scorer``) plus its place in this list; its metric then joins
``scoring.models.Metric``, the values a stored prime may carry (with a migration of their choices).

Why FLEUR and RefFLEUR sit there. Above the CLIP family: in the FLEUR paper's Table 1 (seed
002) FLEUR matches or beats CLIP-S, RefCLIP-S and PAC-S in agreement with human judgement on
every benchmark but Flickr8k-Expert (tau_c: FLEUR 53.0, RefCLIP-S 53.0, CLIP-S 51.2, PAC-S
54.3; COMPOSITE: 63.5 against 55.4, 53.8, 55.7; Pascal-50S: 83.2 against 83.1, 80.7, 82.4),
and RefFLEUR, which also reads the references, does better still on COMPOSITE (64.2) and
Pascal-50S (85.5), as RefCLIP-S sits above CLIP-S. Below the learned predictor: it is the
only scorer checked on this project's own held-out ratings (and is used only after beating
calibrated CLIP-S there), while FLEUR's figures come from other datasets and scales.

``PrimingModels`` is what one worker has configured (from the settings or a command's
options); the heavy models are built on first use and kept for the life of the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from scoring.priming.clip_metrics import ClipS, PacS, RefClipS
from scoring.priming.fleur_metrics import Fleur, RefFleur
from scoring.priming.model_vicr import LearnedPredictor
from scoring.priming.scorer import Scorer, ScorerLoadError

if TYPE_CHECKING:
    from scoring.priming.clip_scorer import ClipScorer
    from scoring.priming.fleur_scorer import FleurScorer

SCORERS: tuple[type[Scorer], ...] = (ClipS, PacS, RefClipS, Fleur, RefFleur, LearnedPredictor)

# Models built in this process, by their configuration (loading one takes seconds).
_LOADED: dict[tuple, Any] = {}


def scorer_class(metric: str) -> type[Scorer]:
    """The registry entry of ``metric``; raises KeyError for a metric no scorer produces."""
    for scorer in SCORERS:
        if scorer.metric == metric:
            return scorer
    raise KeyError(f"no priming scorer produces the metric {metric!r}")


@dataclass(frozen=True)
class PrimingModels:
    """The priming configuration of one worker: the open_clip model (and PAC-S checkpoint), the
    LLaVA model of FLEUR, and where to run them. Neither model: nothing is configured (pairs
    wait with a note). ``fleur_explain``: FLEUR's primes come with the model's explanation
    (a second, longer generation per pair: only on request)."""

    model: str = ""
    pretrained: str | None = None
    pacs_checkpoint: str | None = None
    device: str | None = None
    batch_size: int = 64
    fleur_model: str = ""
    fleur_explain: bool = False
    fleur_batch_size: int = 8

    @classmethod
    def from_settings(cls, **overrides: Any) -> PrimingModels:
        """The settings' configuration (empty strings mean none), with ``overrides`` on top."""
        conf = settings.RATINGGAME
        values = {
            "model": conf.get("PRIMING_MODEL", ""),
            "pretrained": conf.get("PRIMING_PRETRAINED", "") or None,
            "pacs_checkpoint": conf.get("PRIMING_PACS_CHECKPOINT", "") or None,
            "device": conf.get("PRIMING_DEVICE", "") or None,
            "batch_size": int(conf.get("PRIMING_BATCH_SIZE", 64)),
            "fleur_model": conf.get("PRIMING_FLEUR_MODEL", ""),
            "fleur_explain": bool(conf.get("PRIMING_FLEUR_EXPLAIN", False)),
            "fleur_batch_size": int(conf.get("PRIMING_FLEUR_BATCH_SIZE", 8)),
        }
        return cls(**{**values, **overrides})

    @property
    def configured(self) -> bool:
        return bool(self.model or self.fleur_model)

    def clip(self) -> ClipScorer:
        """The open_clip scorer of this configuration, loaded once per process; raises ScorerLoadError."""
        if not self.model:
            raise ScorerLoadError("no priming model configured (set RATINGGAME_PRIMING_MODEL)")
        key = ("clip", self.model, self.pretrained, self.device, self.pacs_checkpoint)
        if key not in _LOADED:
            from scoring.priming.clip_checkpoints import load_scorer

            if self.pacs_checkpoint:
                _LOADED[key] = load_scorer(
                    self.model, self.pacs_checkpoint, self.device, pacs=True, base=self.pretrained
                )
            else:
                _LOADED[key] = load_scorer(self.model, self.pretrained, self.device)
        return _LOADED[key]

    def fleur(self) -> FleurScorer:
        """The LLaVA model of FLEUR and RefFLEUR, loaded once per process; raises ScorerLoadError."""
        if not self.fleur_model:
            raise ScorerLoadError("no FLEUR model configured (set RATINGGAME_PRIMING_FLEUR_MODEL)")
        key = ("fleur", self.fleur_model, self.device)
        if key not in _LOADED:
            from scoring.priming.fleur_scorer import load_fleur

            _LOADED[key] = load_fleur(self.fleur_model, self.device)
        return _LOADED[key]

    def kept(self, key: tuple, make: Callable[[], Any]) -> Any:
        """What ``make`` builds over this configuration's loaded models, built once per process
        and forgotten with them (``loaded_models_clear``)."""
        key = ("kept", *key)
        if key not in _LOADED:
            _LOADED[key] = make()
        return _LOADED[key]

    def scorers(self) -> list[Scorer]:
        """The scorers this configuration provides, in registry order (worst first); raises
        ScorerLoadError when a configured model cannot be loaded."""
        return [scorer for kind in SCORERS if (scorer := kind.build(self)) is not None]


def loaded_models_clear() -> None:
    """Forget the models this process loaded (tests that change the configured weights)."""
    _LOADED.clear()
