"""FLEUR and RefFLEUR: the registry's scorers over one LLaVA model (SPEC section 4; seed 002).

Both read the configured LLaVA model (``PrimingModels.fleur``): FLEUR scores every pair,
RefFLEUR the pairs that have reference captions (it does not apply to the others). Their raw
scores lie in [0, 1] and reach the 1-5 scale through the same calibration as every scorer's:
the default map ``calibration.unit_knots`` until enough human ratings exist, then isotonic
regression. With ``PrimingModels.fleur_explain`` each score comes with the model's
explanation, stored on the prime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from scoring.priming.calibration import unit_knots
from scoring.priming.scorer import Knots, PrimingPair, RawScore

if TYPE_CHECKING:
    from scoring.priming.configuration import PrimingModels
    from scoring.priming.fleur_scorer import FleurScorer


class _FleurFamily:
    refit = True
    explains = True
    with_references: ClassVar[bool]

    def __init__(self, scorer: FleurScorer, *, explain: bool, batch_size: int) -> None:
        self.scorer = scorer
        self.identity = scorer.identity
        self.explain = explain
        self.batch_size = batch_size

    @classmethod
    def build(cls, models: PrimingModels) -> _FleurFamily | None:
        if not models.fleur_model:
            return None
        return cls(models.fleur(), explain=models.fleur_explain, batch_size=models.fleur_batch_size)

    @classmethod
    def default_knots(cls) -> Knots:
        return unit_knots()

    def score_pairs(self, pairs: Sequence[PrimingPair]) -> list[RawScore]:
        return self.scorer.score_pairs(
            pairs, references=self.with_references, explain=self.explain, batch_size=self.batch_size
        )


class Fleur(_FleurFamily):
    """FLEUR: the LLaVA model's smoothed 0.0-1.0 rating of the caption, without references."""

    metric = "fleur"
    label = "FLEUR"
    with_references = False


class RefFleur(_FleurFamily):
    """RefFLEUR: the same, with the pair's reference captions in the prompt."""

    metric = "ref_fleur"
    label = "RefFLEUR"
    with_references = True
