"""Study settings (issue 20, item 1; SPEC 7): what raters are told on the consent and home pages,
the staff page that shows every setting, and a closed study that takes no new raters."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotators.models import RaterProfile
from ratinggame.env import env_datetime, env_decimal
from tests.ratinggame.api_helpers import admin, annotator, error_of, researcher

pytestmark = pytest.mark.django_db

STUDY = {
    "TITLE": "Caption quality for blind readers",
    "OPERATOR": "Dr Ada Example, Vision Lab",
    "CONTACT": "vision-lab@example.org",
    "MINUTES": 45,
    "COMPENSATION": "£9.00 an hour plus a bonus of 1p a point",
}


@pytest.fixture
def described(settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, **STUDY}


def test_consent_page_names_title_operator_contact_minutes_and_compensation(client, described):
    user = get_user_model().objects.create_user("newcomer", password="x")
    RaterProfile.objects.create(user=user)
    client.force_login(user)
    page = client.get(reverse("annotators:consent")).content.decode()
    for words in STUDY.values():
        assert str(words) in page
    assert 'href="mailto:vision-lab@example.org"' in page
    assert "about 45 minutes" in page


def test_home_page_shows_the_study_to_a_visitor(client, described):
    page = client.get(reverse("home")).content.decode()
    assert "<h1>Caption quality for blind readers</h1>" in page
    for key in ("OPERATOR", "COMPENSATION"):
        assert STUDY[key] in page
    assert "About 45 minutes per session" in page


@pytest.mark.parametrize("how", ["flag", "date"])
def test_a_closed_study_refuses_sign_up_on_the_page_and_the_api(client, described, settings, how):
    closing = {"CLOSED": True} if how == "flag" else {"CLOSES_AT": timezone.now() - timedelta(minutes=1)}
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, **closing}
    page = client.post(
        reverse("annotators:signup"),
        {"username": "late", "password1": "a long pass phrase 1", "password2": "a long pass phrase 1"},
    )
    assert page.status_code == 403
    assert "This study is closed" in page.content.decode()
    answer = APIClient().post("/api/auth/signup", {"username": "late2", "password": "a long pass phrase 1"})
    assert answer.status_code == 403 and error_of(answer)["code"] == "study_closed"
    assert not get_user_model().objects.exists()
    # The home page says so, and offers no sign-up.
    home = client.get(reverse("home")).content.decode()
    assert 'id="study-closed"' in home and reverse("annotators:signup") not in home


def test_a_closing_date_still_ahead_leaves_the_study_open(client, described, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "CLOSES_AT": timezone.now() + timedelta(days=1)}
    assert client.get(reverse("annotators:signup")).status_code == 200


def test_an_existing_rater_of_a_closed_study_is_told_and_may_finish(client, described, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "CLOSED": True}
    client.force_login(annotator())
    page = client.get(reverse("annotators:me"))
    assert page.status_code == 200
    assert 'id="study-closed-banner"' in page.content.decode()


def test_with_open_sign_up_off_the_sign_up_page_sends_people_to_their_platform_link(client, described, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "OPEN_SIGNUP": False}
    page = client.get(reverse("annotators:signup"))
    assert page.status_code == 403 and 'id="signup-closed"' in page.content.decode()
    answer = APIClient().post("/api/auth/signup", {"username": "someone", "password": "a long pass phrase 1"})
    assert answer.status_code == 403 and error_of(answer)["code"] == "signup_closed"
    assert not get_user_model().objects.exists()


def test_researchers_and_staff_see_every_setting_read_only_and_annotators_do_not(client, described, settings):
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "PAY_HOURLY": Decimal("9.00"),
        "COMPLETION_CODE": "C1A2B3",
    }
    client.force_login(annotator())
    assert client.get(reverse("annotators:study_settings")).status_code == 403
    for user in (researcher(), admin()):
        client.force_login(user)
        page = client.get(reverse("annotators:study_settings")).content.decode()
        for words in (
            "Caption quality for blind readers",
            "9.00",
            "C1A2B3",
            "Session quota: counted game ratings",
            "100",
        ):
            assert words in page
        assert "<form" not in page.split('id="settings-heading"')[1]
    # A staff member's old bookmark follows the page to its new address.
    assert client.get("/staff/study/").headers["Location"] == reverse("annotators:study_settings")


def test_money_and_dates_from_the_environment_are_checked(monkeypatch):
    monkeypatch.setenv("RATE", "12.5")
    assert env_decimal("RATE", "0") == Decimal("12.5")
    for bad in ("twelve", "-1", "NaN"):
        monkeypatch.setenv("RATE", bad)
        with pytest.raises(ImproperlyConfigured, match="RATE"):
            env_decimal("RATE", "0")
    monkeypatch.setenv("CLOSES", "2026-12-31")
    end = env_datetime("CLOSES")
    assert (end.year, end.month, end.day, end.hour, end.minute) == (2026, 12, 31, 23, 59)
    monkeypatch.setenv("CLOSES", "31/12/2026")
    with pytest.raises(ImproperlyConfigured, match="CLOSES"):
        env_datetime("CLOSES")
