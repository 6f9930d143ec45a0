"""What a priming scorer is (SPEC section 4): the protocol every entry of the registry follows.

A scorer turns (image, caption[, references]) pairs into raw scores of one metric: ``metric``
is the identifier a stored prime names it by and ``label`` its name for people (both listed
by ``scoring.priming.registry``), ``explains`` whether its primes may carry the model's
explanation. Its ``identity`` names the weights (stored on each prime and keying the calibration that maps
raw scores to the 1-5 scale); ``default_knots`` is that calibration until enough human
ratings exist (``refit``: whether it is then fitted to them at all). ``build`` returns the
scorer when the worker's configuration provides it, None otherwise. No Django import, no
torch import here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from PIL import Image

    from scoring.priming.configuration import PrimingModels

Knots = tuple[list[float], list[float]]


class ScorerLoadError(Exception):
    """The scorer could not be built; the message names the source and what was wrong."""


def short_error(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class PrimingPair:
    """One pair to score. ``image_key`` identifies the image (its sha256): scorers decode each
    distinct image at most once, with ``load_image``."""

    pk: int
    image_key: str
    load_image: Callable[[], Image.Image]
    caption: str
    references: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class RawScore:
    """A scorer's raw score of one pair; ``value`` None without ``error``: the scorer does not
    apply to this pair (RefCLIP-S of a pair without references). ``explanation``: the scorer's
    own words for the score, from the scorers that give them when asked (FLEUR), else ""."""

    value: float | None = None
    error: str | None = None
    explanation: str = ""


class Scorer(Protocol):
    metric: ClassVar[str]
    label: ClassVar[str]
    explains: ClassVar[bool]
    refit: ClassVar[bool]
    identity: str

    @classmethod
    def build(cls, models: PrimingModels) -> Scorer | None: ...

    @classmethod
    def default_knots(cls) -> Knots: ...

    def score_pairs(self, pairs: Sequence[PrimingPair]) -> list[RawScore]: ...
