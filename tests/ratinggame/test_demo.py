"""load_demo: real photographs from scikit-image, the tutorial and probation sets, idempotent."""

import io

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from ratinggame import demo_content
from ratinggame.models import CaptionPair, Image, Pool

pytestmark = pytest.mark.django_db


def run_demo(settings, demo_mode=True) -> str:
    settings.RATINGGAME = {**settings.RATINGGAME, "DEMO_MODE": demo_mode}
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_demo_has_tutorial_probation_and_game_pairs(settings):
    run_demo(settings)
    assert CaptionPair.objects.filter(pool=Pool.TUTORIAL).count() == 10
    assert CaptionPair.objects.filter(pool=Pool.PROBATION).count() == 20
    assert CaptionPair.objects.filter(pool=Pool.GAME).count() == len(demo_content.GAME) >= 40
    teaching = CaptionPair.objects.exclude(pool=Pool.GAME)
    assert not teaching.filter(expert_rating__isnull=True).exists()
    assert not teaching.filter(explanation="").exists()
    # The tutorial teaches the whole scale: every level appears.
    assert set(CaptionPair.objects.filter(pool=Pool.TUTORIAL).values_list("expert_rating", flat=True)) == {
        1,
        2,
        3,
        4,
        5,
    }
    tutorial_order = list(CaptionPair.objects.filter(pool=Pool.TUTORIAL).order_by("display_order"))
    assert [p.caption for p in tutorial_order] == [item["caption"] for item in demo_content.TUTORIAL]


def test_demo_images_are_real_photographs_stored_once(settings):
    run_demo(settings)
    assert Image.objects.count() == len(demo_content.DEMO_IMAGES)
    astronaut = Image.objects.get(original_name="astronaut.png")
    assert (astronaut.width, astronaut.height) == (512, 512)
    assert astronaut.source == "scikit-image data: astronaut.png"


def test_load_demo_is_idempotent(settings):
    first = run_demo(settings)
    counts = (Image.objects.count(), CaptionPair.objects.count(), get_user_model().objects.count())
    second = run_demo(settings)
    assert (Image.objects.count(), CaptionPair.objects.count(), get_user_model().objects.count()) == counts
    assert "0 new pair(s)" in second
    assert f"{CaptionPair.objects.count()} already present" in second
    assert "new pair(s)" in first


def test_demo_accounts_print_working_passwords_in_demo_mode(settings):
    out = run_demo(settings)
    for username in ("admin", "researcher", "annotator1", "annotator2"):
        line = next(line for line in out.splitlines() if line.strip().startswith(username + " "))
        password = line.split()[-1]
        assert authenticate(username=username, password=password) is not None
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser
    assert get_user_model().objects.get(username="annotator1").groups.filter(name="annotator").exists()


def test_no_demo_accounts_outside_demo_mode(settings):
    out = run_demo(settings, demo_mode=False)
    assert "no demo accounts created" in out
    assert not get_user_model().objects.exists()
    assert CaptionPair.objects.count() > 0
