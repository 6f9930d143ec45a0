"""The site's own pages around the game: errors, password reset, log-in, consent, favicon."""

import re

import pytest
from django.core import mail
from django.test import RequestFactory
from django.urls import reverse
from django.views.defaults import server_error

from annotators.models import RaterProfile
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
SITE = "Caption rating game"


def test_error_pages_are_in_the_sites_style(client):
    missing = client.get("/no/such/page/")
    assert missing.status_code == 404
    assert SITE in missing.content.decode() and "There is no such page" in missing.content.decode()
    client.force_login(UserFactory())
    forbidden = client.get(reverse("staff:dashboard"))
    assert forbidden.status_code == 403
    assert SITE in forbidden.content.decode() and "You may not open this page" in forbidden.content.decode()
    crashed = server_error(RequestFactory().get("/"))
    assert crashed.status_code == 500
    assert "Something went wrong on our side" in crashed.content.decode()


def test_every_page_has_the_favicon(client):
    assert 'rel="icon" href="/static/favicon.svg"' in client.get(reverse("home")).content.decode()


def test_forgotten_password_from_the_log_in_page_to_a_new_password(client):
    user = UserFactory(email="ada@example.org")
    login = client.get(reverse("login")).content.decode()
    assert 'href="/accounts/password_reset/"' in login and "Forgot password?" in login
    form = client.get(reverse("password_reset")).content.decode()
    assert SITE in form and "Django administration" not in form
    sent = client.post(reverse("password_reset"), {"email": "ada@example.org"})
    assert sent["Location"] == reverse("password_reset_done")
    link = re.search(r"http://testserver(/accounts/reset/\S+)", mail.outbox[0].body).group(1)
    confirm = client.get(link, follow=True)
    assert "Choose a new password" in confirm.content.decode()
    new = "a brand new pass phrase 77"
    done = client.post(confirm.redirect_chain[-1][0], {"new_password1": new, "new_password2": new}, follow=True)
    assert "Your new password is saved" in done.content.decode()
    user.refresh_from_db()
    assert user.check_password(new)


def unconsented_user():
    user = UserFactory()
    RaterProfile.objects.create(user=user)
    return user


def test_consent_names_who_runs_the_study_and_what_is_published(client, settings):
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "OPERATOR": "The Example Vision Lab",
        "CONTACT": "study@example.org",
    }
    client.force_login(unconsented_user())
    page = client.get(reverse("annotators:consent")).content.decode()
    assert "The Example Vision Lab" in page and 'href="mailto:study@example.org"' in page
    published = re.search(r'<li id="published">(.*?)</li>', page, re.S).group(1)
    for words in ("the rating (1 to 5)", "the date and time", "the seconds you spent"):
        assert words in published
    assert "Delete my data" in page


def test_the_home_page_shows_one_caption_of_each_of_six_different_images(client, django_assert_max_num_queries):
    from tests.factories import CaptionPairFactory, ImageFactory, TutorialPairFactory

    images = [ImageFactory(seed=40 + i) for i in range(8)]
    firsts = []
    for index, image in enumerate(images):
        # Several captions per image, as the demo has: the first of each is shown.
        firsts.append(CaptionPairFactory(image=image, caption=f"first caption of image {index}"))
        CaptionPairFactory(image=image, caption=f"another caption of image {index}")
    TutorialPairFactory(image=ImageFactory(seed=60), caption="a tutorial caption")  # never on the home page
    with django_assert_max_num_queries(8):
        page = client.get(reverse("home")).content.decode()
    gallery = page.split('<ul class="gallery">')[1].split("</ul>")[0]
    shown = re.findall(r"<figcaption>(.*?)</figcaption>", gallery)
    assert shown == [f"first caption of image {i}" for i in range(6)]
    assert len({pair.image.file.url for pair in firsts[:6]} & set(re.findall(r'src="([^"]+)"', gallery))) == 6
