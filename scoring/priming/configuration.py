"""What one priming worker has configured, and the models it has loaded.

``PrimingModels`` comes from the settings or a command's options; the heavy models are built on
first use and kept for the life of the process (loading one takes seconds). The scorers it
provides are the registry's (``scoring.priming.registry``), in its order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from scoring.priming.registry import SCORERS
from scoring.priming.scorer import Scorer, ScorerLoadError

if TYPE_CHECKING:
    from scoring.priming.clip_scorer import ClipScorer
    from scoring.priming.fleur_scorer import FleurScorer

# Models built in this process, by their configuration.
_LOADED: dict[tuple, Any] = {}


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
