"""The images a rater's next game serve keeps away from (SPEC 5: never two captions of one image
in a row while a pair of another image is open): those of their latest serves, carried on their
profile, so that keeping away from more of them is one number (``gameplay.IMAGES_AVOIDED``)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from ratinggame import game
from ratinggame.game import gameplay
from ratinggame.game.prefetch import next_pair_image
from ratinggame.models import CaptionPair, Pool
from tests.factories import CaptionPairFactory, ControlPairFactory, ImageFactory, UserFactory
from tests.ratinggame.journey_helpers import T0, Clock, rater

pytestmark = pytest.mark.django_db


def _pairs_of_images(images: int, per_image: int) -> None:
    for _ in range(images):
        image = ImageFactory()
        for _ in range(per_image):
            CaptionPairFactory(pool=Pool.GAME, image=image)


def _served_images(user, serves: int, *, with_rating: bool) -> list[int]:
    """The images of ``serves`` game serves in a row, each but the last rated (the next pair served
    by the rating itself when ``with_rating``, else by a serve of its own)."""
    clock = Clock(T0)
    served = game.pair_serve(rater=user, now=clock.now)
    images = []
    for _ in range(serves - 1):
        images.append(CaptionPair.objects.get(pk=served.pair_id).image_id)
        clock.tick(4)
        feedback = game.rating_submit(
            rater=user, assignment_id=served.assignment_id, value=3, now=clock.now, serve_next=with_rating
        )
        clock.tick(1)
        served = feedback.next if with_rating else game.pair_serve(rater=user, now=clock.now)
    return [*images, CaptionPair.objects.get(pk=served.pair_id).image_id]


@pytest.mark.parametrize("with_rating", [False, True])
@pytest.mark.parametrize("avoided", [1, 3])
def test_each_serve_keeps_away_from_the_images_of_the_raters_latest_serves(monkeypatch, avoided, with_rating):
    """Five images of four captions each: every run of ``avoided`` + 1 serves shows as many images
    (with 1, no image twice in a row), by a serve of its own and by the serve with a rating."""
    monkeypatch.setattr(gameplay, "IMAGES_AVOIDED", avoided)
    _pairs_of_images(images=5, per_image=4)
    user = rater(RaterState.GAME)
    images = _served_images(user, 12, with_rating=with_rating)
    for start in range(len(images) - avoided):
        run = images[start : start + avoided + 1]
        assert len(set(run)) == len(run), images
    assert RaterProfile.objects.get(user=user).recent_images == images[-avoided:]


def test_an_image_comes_again_at_once_when_no_pair_of_another_image_is_open():
    _pairs_of_images(images=1, per_image=3)
    user = rater(RaterState.GAME)
    images = _served_images(user, 3, with_rating=True)
    assert len(images) == 3 and len(set(images)) == 1


def test_a_control_pair_keeps_away_from_the_latest_image_too(monkeypatch):
    """The block's control (SPEC 2.5) is picked among the control pairs of other images first."""
    monkeypatch.setattr("annotators.journey.control_due_now", lambda *args: True)
    seen = ImageFactory()
    ControlPairFactory(image=seen, expert_rating=3)
    other = ControlPairFactory(expert_rating=3)
    user = rater(RaterState.GAME)
    RaterProfile.objects.filter(user=user).update(recent_images=[seen.pk])
    served = game.pair_serve(rater=user, now=T0)
    assert served.pair_id == other.pk


def test_the_next_image_guessed_keeps_away_from_the_open_pairs_image():
    _pairs_of_images(images=2, per_image=3)
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    guessed = next_pair_image(rater=user, served=served)
    assert guessed is not None
    assert guessed.pk != CaptionPair.objects.get(pk=served.pair_id).image_id


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_each_raters_latest_game_screen_image():
    """Raters served before the profile carried its images: their latest game, control or attention
    serve's image; a rater served only in the tutorial, none."""
    before = [("annotators", "0017_raterprofile_game_skips"), ("ratinggame", "0014_refit_follows_ratings")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = MigrationExecutor(connection).loader.project_state(before).apps
    old_profile = apps.get_model("annotators", "RaterProfile")
    old_assignment = apps.get_model("ratinggame", "Assignment")
    now = timezone.now()
    game_pairs = [CaptionPairFactory() for _ in range(2)]
    control = ControlPairFactory()
    tutorial = CaptionPairFactory(pool=Pool.TUTORIAL)
    gamer, checked, learner = UserFactory(), UserFactory(), UserFactory()
    for user in (gamer, checked, learner):
        old_profile.objects.create(user_id=user.pk)

    def served(user, pair, stage):
        old_assignment.objects.create(
            rater_id=user.pk, pair_id=pair.pk, stage=stage, served_at=now, expires_at=now + timedelta(minutes=30)
        )

    served(gamer, game_pairs[0], "game")
    served(gamer, game_pairs[1], "game")
    served(checked, game_pairs[0], "game")
    served(checked, control, "control")
    served(learner, tutorial, "tutorial")
    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    found = dict(RaterProfile.objects.values_list("user_id", "recent_images"))
    assert found == {gamer.pk: [game_pairs[1].image_id], checked.pk: [control.image_id], learner.pk: []}
