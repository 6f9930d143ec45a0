"""A small, fixed rating world for the export tests (built through the ORM, no game rules)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotators.roles import ANNOTATOR, ensure_roles
from ratinggame.models import CaptionPair
from scoring.models import ModelRating
from tests.factories import (
    CaptionPairFactory,
    ImageFactory,
    ProbationPairFactory,
    TutorialPairFactory,
    rating_make,
)

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SOURCES = ("coco", "pythia", "mismatched")
OFFSETS = (0, 0, 1, -1, 0, 1, 0)  # rater j's deviation from a pair's quality
EXCLUDED_REASON = "qualification window failed"
CLIP = ("clip_s", "ViT-B-32/openai")
REFCLIP = ("ref_clip_s", "ViT-B-32/openai")


@dataclass
class World:
    raters: list = field(default_factory=list)
    game_pairs: list[CaptionPair] = field(default_factory=list)
    short_pair: CaptionPair | None = None  # 2 valid ratings
    excluded_short_pair: CaptionPair | None = None  # 2 valid + 1 excluded
    excluded_pair: CaptionPair | None = None  # 3 valid + 1 excluded
    unrated_pair: CaptionPair | None = None
    tutorial_pair: CaptionPair | None = None
    probation_pair: CaptionPair | None = None
    minute: int = 0

    def rate(self, pair: CaptionPair, values, *, first_rater: int = 0, **extra) -> None:
        self.minute += 1
        for j, value in enumerate(values):
            rating_make(
                rater=self.raters[first_rater + j],
                pair=pair,
                value=value,
                submitted_at=START + timedelta(minutes=self.minute, seconds=j),
                seconds=4.0 + j,
                **extra,
            )


def pairs_add(world: World, count: int, *, first_image_seed: int) -> list[CaptionPair]:
    """``count`` game pairs on fresh images (two captions on every third image), rated 3..7 times, scored."""
    added = []
    image = None
    for k in range(count):
        if k % 3 != 1 or image is None:
            image = ImageFactory(seed=first_image_seed + k)
        pair = CaptionPairFactory(image=image, source=SOURCES[k % 3], caption=f"caption {first_image_seed} {k}")
        quality = 1 + k % 5
        n = 3 + k % 5
        world.rate(pair, [min(5, max(1, quality + OFFSETS[j])) for j in range(n)], first_rater=k % 2)
        ModelRating.objects.create(
            pair=pair,
            slot=1,
            model_identity=CLIP[1],
            metric=CLIP[0],
            raw_score=0.05 * quality + 0.01 * (k % 4),
            value=1 + quality * 0.7,
        )
        if k % 2 == 0:
            ModelRating.objects.create(
                pair=pair, slot=2, model_identity=REFCLIP[1], metric=REFCLIP[0], raw_score=0.3 + 0.02 * k, value=2.5
            )
        added.append(pair)
    world.game_pairs += added
    return added


def world_build(pairs: int = 30) -> World:
    ensure_roles()
    world = World()
    annotators = Group.objects.get(name=ANNOTATOR)
    for name in ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"):
        # No password: hashing one costs ~1 s per user here, and these raters never log in.
        user = get_user_model().objects.create_user(username=name, password=None)
        user.groups.add(annotators)
        world.raters.append(user)
    pairs_add(world, pairs, first_image_seed=7000)

    world.short_pair = CaptionPairFactory(image=ImageFactory(seed=7900), caption="two ratings only")
    world.rate(world.short_pair, [3, 4])
    world.excluded_short_pair = CaptionPairFactory(image=ImageFactory(seed=7901), caption="two plus one excluded")
    world.rate(world.excluded_short_pair, [2, 2])
    world.rate(world.excluded_short_pair, [5], first_rater=5, excluded=True, excluded_reason=EXCLUDED_REASON)
    world.excluded_pair = CaptionPairFactory(image=ImageFactory(seed=7902), caption="three plus one excluded")
    world.rate(world.excluded_pair, [4, 4, 5])
    world.rate(world.excluded_pair, [1], first_rater=6, excluded=True, excluded_reason=EXCLUDED_REASON)
    world.rate(world.excluded_pair, [1], first_rater=7, excluded=True, excluded_reason="")
    world.game_pairs.append(world.excluded_pair)
    world.unrated_pair = CaptionPairFactory(image=ImageFactory(seed=7903), caption="nobody rated me")

    world.tutorial_pair = TutorialPairFactory(image=ImageFactory(seed=7904), caption="tutorial pair")
    world.rate(world.tutorial_pair, [3, 3, 3, 3])
    world.probation_pair = ProbationPairFactory(image=ImageFactory(seed=7905), caption="probation pair")
    world.rate(world.probation_pair, [5, 5, 5])
    return world
