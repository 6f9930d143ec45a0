"""Sign-up through the page and the API (issue 15, parts 4 and 5): names and addresses the user
model cannot store are refused by field, spellings of a taken name are taken, and one limit per
address holds across both doors."""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from annotators.models import RaterProfile
from tests.ratinggame.api_helpers import PASSWORD, error_of

pytestmark = pytest.mark.django_db

LONG_EMAIL = "a" * 250 + "@example.org"  # 262 characters; the column holds 254
EXPANDING = "\ufdfa" * 150  # 150 characters that NFKC folds into 2,700


@pytest.fixture(autouse=True)
def _fresh(settings):
    cache.clear()
    yield
    cache.clear()


def api_signup(username: str, email: str = "", address: str = "198.51.100.1"):
    body = {"username": username, "password": PASSWORD, "email": email}
    return APIClient(REMOTE_ADDR=address).post("/api/auth/signup", body, format="json")


def page_signup(username: str, email: str = "", address: str = "198.51.100.1"):
    form = {"username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD}
    return Client(REMOTE_ADDR=address).post("/accounts/signup/", form)


def usernames() -> list[str]:
    return sorted(get_user_model().objects.values_list("username", flat=True))


@pytest.mark.parametrize(
    ("username", "email", "field"),
    [
        ("longmail", LONG_EMAIL, "email"),
        (EXPANDING, "", "username"),
    ],
    ids=["262-char e-mail", "name NFKC folds to 2,700 characters"],
)
def test_what_the_user_model_cannot_store_is_refused_by_field(username, email, field):
    answer = api_signup(username, email)
    assert answer.status_code == 400, answer.content
    assert field in error_of(answer)["details"], error_of(answer)
    page = page_signup(username, email, address="198.51.100.2")
    assert page.status_code == 400
    assert page.context["form"].errors.get(field), page.context["form"].errors
    assert usernames() == [] and not RaterProfile.objects.exists()


@pytest.mark.parametrize("taken", ["RES1", "res1", "Res1"])
@pytest.mark.parametrize("door", ["api", "page"])
def test_a_fullwidth_spelling_of_a_taken_name_is_taken(taken, door):
    assert api_signup(taken).status_code == 201
    answer = (api_signup if door == "api" else page_signup)("ＲＥＳ１", address="198.51.100.3")
    assert answer.status_code == 400
    says = error_of(answer)["details"]["username"] if door == "api" else answer.context["form"].errors["username"]
    assert "taken" in " ".join(says) or "already exists" in " ".join(says)
    assert usernames() == [taken]


def test_a_fullwidth_name_is_stored_as_log_in_folds_it():
    assert api_signup("ｎｅｗｂｉｅ").status_code == 201
    assert usernames() == ["newbie"]
    assert Client().login(username="newbie", password=PASSWORD)


def test_the_page_and_the_api_share_one_sign_up_limit_per_address(monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "signup": "3/hour"})
    assert api_signup("first").status_code == 201
    assert page_signup("second").status_code == 302
    assert api_signup("third").status_code == 201
    page = page_signup("fourth")
    assert page.status_code == 429 and int(page["Retry-After"]) > 0
    assert "Too many accounts" in page.content.decode()
    assert api_signup("fifth").status_code == 429
    assert usernames() == ["first", "second", "third"]
    assert page_signup("elsewhere", address="203.0.113.50").status_code == 302


def test_a_refused_sign_up_lists_every_error_at_the_top_and_keeps_accepted_passwords():
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(username="taken", password="x")
    password = "a long enough pass phrase 42"
    form = {"username": "taken", "email": "", "password1": password, "password2": password}
    page = Client().post("/accounts/signup/", form).content.decode()
    summary = page.split('id="form-errors"')[1].split("</div>")[0]
    assert page.index('id="form-errors"') < page.index('name="username"')
    assert '<a href="#id_username">Username</a>: A user with that username already exists.' in summary
    # The username was the only fault: the passwords stay filled in.
    assert page.count(f'value="{password}"') == 2

    form.update(username="fresh", password2="something else entirely 7")
    page = Client().post("/accounts/signup/", form).content.decode()
    summary = page.split('id="form-errors"')[1].split("</div>")[0]
    assert "The two password fields didn" in summary and 'href="#id_password2"' in summary
    assert password not in page  # a refused password is never sent back
