"""CLIP-S, RefCLIP-S and PAC-S: the registry's scorers over one open_clip model (SPEC section 4).

All three read the configured open_clip model (``PrimingModels.clip``): CLIP-S with ordinary
CLIP weights, PAC-S (w = 2.0) when a PAC-S checkpoint is configured, and RefCLIP-S for pairs
that have reference captions, over whichever of the two is loaded. They share one pass of the
model per batch (``_SharedScores``): each image is decoded and encoded once, each text once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scoring.priming.calibration import default_knots
from scoring.priming.scorer import Knots, PrimingPair, RawScore

if TYPE_CHECKING:
    from scoring.priming.clip_scorer import ClipScorer, PairScore
    from scoring.priming.configuration import PrimingModels


def clip_identity(clip: ClipScorer) -> str:
    """A short stable name of an open_clip scorer's weights, for primes and calibrations."""
    ident = clip.identity
    weights = ident.get("sha256") or ident.get("pretrained") or "-"
    return f"{ident.get('model')} weights={weights} w={ident.get('w')}"[:250]


class _SharedScores:
    """The open_clip scores of the last batch, shared by the scorers of one model."""

    def __init__(self, clip: ClipScorer, batch_size: int) -> None:
        self.clip = clip
        self.batch_size = batch_size
        self._last: tuple[tuple, list[PairScore]] | None = None

    def scores(self, pairs: Sequence[PrimingPair]) -> list[PairScore]:
        key = tuple((p.image_key, p.caption, p.references) for p in pairs)
        if self._last is None or self._last[0] != key:
            items = [(p.image_key, p.load_image, p.caption, list(p.references) or None) for p in pairs]
            self._last = (key, self.clip.score_pairs(items, self.batch_size))
        return self._last[1]


def _shared(models: PrimingModels) -> _SharedScores:
    clip = models.clip()
    return models.kept(("clip scores", id(clip), models.batch_size), lambda: _SharedScores(clip, models.batch_size))


class _ClipFamily:
    refit = True
    explains = False

    def __init__(self, shared: _SharedScores) -> None:
        self.shared = shared
        self.identity = clip_identity(shared.clip)

    @classmethod
    def default_knots(cls) -> Knots:
        return default_knots()

    @staticmethod
    def _raw(score: PairScore) -> float | None:
        raise NotImplementedError

    def score_pairs(self, pairs: Sequence[PrimingPair]) -> list[RawScore]:
        return [
            RawScore(error=score.error) if score.error else RawScore(value=self._raw(score))
            for score in self.shared.scores(pairs)
        ]


class ClipS(_ClipFamily):
    """CLIP-S of the configured CLIP weights (not PAC-S)."""

    metric = "clip_s"
    label = "CLIP-S"

    @classmethod
    def build(cls, models: PrimingModels) -> ClipS | None:
        if not models.model or models.pacs_checkpoint:
            return None
        return cls(_shared(models))

    @staticmethod
    def _raw(score: PairScore) -> float | None:
        return score.clip_s


class PacS(ClipS):
    """PAC-S: CLIP-S's formula on a PAC-S checkpoint, w = 2.0."""

    metric = "pac_s"
    label = "PAC-S"

    @classmethod
    def build(cls, models: PrimingModels) -> PacS | None:
        if not models.model or not models.pacs_checkpoint:
            return None
        return cls(_shared(models))


class RefClipS(_ClipFamily):
    """RefCLIP-S, for pairs that have reference captions, over the loaded CLIP (or PAC-S) weights."""

    metric = "ref_clip_s"
    label = "RefCLIP-S"

    @classmethod
    def build(cls, models: PrimingModels) -> RefClipS | None:
        return cls(_shared(models)) if models.model else None

    @staticmethod
    def _raw(score: PairScore) -> float | None:
        return score.ref_clip_s
