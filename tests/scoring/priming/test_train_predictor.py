"""``manage.py train_predictor``: the learned predictor trained on this site's validated pairs,
their stored images embedded by the configured priming model (VICR paper section 6)."""

import pytest
from django.core.management import CommandError, call_command

from ratinggame.models import Pool
from scoring.models import PredictorRun
from scoring.splits import TEST, TRAIN, VAL, split_for_image
from tests.factories import CaptionPairFactory, ImageFactory, UserFactory, rating_record
from tests.scoring.priming.modules import needs_module

needs_module("open_clip", reason="open_clip is not installed (the predictor trains on workers)")

pytestmark = pytest.mark.django_db


def validated_pairs(per_split: int) -> dict[str, int]:
    """Game pairs with three counted ratings each, one per image, until every split (by image)
    has ``per_split`` of them; returns how many each split got."""
    raters = [UserFactory() for _ in range(3)]
    sizes = {TRAIN: 0, VAL: 0, TEST: 0}
    while min(sizes.values()) < per_split:
        image = ImageFactory()
        pair = CaptionPairFactory(image=image, pool=Pool.GAME, human_count=3)
        for rater, value in zip(raters, (1 + pair.pk % 5, 1 + (pair.pk + 1) % 5, 1 + pair.pk % 5), strict=True):
            rating_record(rater=rater, pair=pair, value=value, stage=Pool.GAME)
        sizes[split_for_image(image.sha256)] += 1
    return sizes


def test_the_command_embeds_every_validated_pairs_stored_image_and_records_a_run(priming, capsys):
    sizes = validated_pairs(per_split=3)
    CaptionPairFactory(pool=Pool.PROBATION, expert_rating=3)  # not a game pair: never trained on
    call_command("train_predictor", "--seed", "1", "--max-epochs", "5", "--patience", "2")
    run = PredictorRun.objects.get()
    # Every pair's image was read from storage and embedded: none left out.
    assert run.metrics["pairs"] == {TRAIN: sizes[TRAIN], VAL: sizes[VAL], TEST: sizes[TEST]}
    assert run.metrics["test_human_ratings"] == 3 * sizes[TEST]
    assert run.metrics["epochs_run"] <= 5
    assert f"run {run.pk}:" in capsys.readouterr().out
    assert run.base_model_identity and (priming.MEDIA_ROOT / run.checkpoint).is_file()


def test_too_few_validated_pairs_is_a_clear_error_and_records_nothing(priming):
    CaptionPairFactory(pool=Pool.GAME, human_count=3)
    with pytest.raises(CommandError, match="not enough validated pairs to train"):
        call_command("train_predictor", "--max-epochs", "5")
    assert not PredictorRun.objects.exists()
