"""Pairs and primes of the priming runner's tests: created as imports create them, read back."""

from django.db import transaction

from ratinggame.models import CaptionPair, Pool
from ratinggame.pairs.services import pair_create, pairs_created
from scoring.models import ModelRating
from tests.factories import ImageFactory


def hand_default(raw: float) -> float:
    return min(max(1 + 8 * (raw - 0.5), 1.0), 5.0)


def make_pairs(captions_per_image: list[int], pool: str = Pool.GAME, references=None) -> list[CaptionPair]:
    """Pairs created the way imports create them: committed, then queued (eager here)."""
    pairs = []
    with transaction.atomic():
        for n, count in enumerate(captions_per_image):
            image = ImageFactory()
            for k in range(count):
                caption = f"caption {k} of image {n} in {pool}"
                pairs.append(
                    pair_create(image=image, caption=caption, source="other", pool=pool, references=references)
                )
        pairs_created([p.pk for p in pairs])
    return pairs


def primes_of(pair: CaptionPair) -> list[tuple]:
    return list(
        ModelRating.objects.filter(pair=pair).order_by("slot").values_list("slot", "metric", "raw_score", "value")
    )


def prime_counts(ids: list[int]) -> dict[int, int]:
    """How many primes each pair has."""
    counts = dict.fromkeys(ids, 0)
    for pair_id in ModelRating.objects.filter(pair_id__in=ids).values_list("pair_id", flat=True):
        counts[pair_id] += 1
    return counts
