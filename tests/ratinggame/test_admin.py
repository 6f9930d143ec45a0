"""The Django admin: every model's list and add pages load, with thumbnails, search and filters,
and image uploads go through the same checks as the importer."""

import pytest
from django.contrib import admin
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ratinggame.models import CaptionPair, Image
from tests.factories import CaptionPairFactory, TutorialPairFactory, UserFactory, png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    user = UserFactory(username="boss", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def registered_models():
    return [model for model in admin.site._registry if model._meta.app_label in {"ratinggame", "annotators", "scoring"}]


def test_all_project_models_are_registered():
    names = {f"{m._meta.app_label}.{m.__name__}" for m in registered_models()}
    assert {
        "ratinggame.Image",
        "ratinggame.CaptionPair",
        "ratinggame.Assignment",
        "ratinggame.Rating",
        "annotators.RaterProfile",
        "scoring.ModelRating",
        "scoring.ExportJob",
    } <= names


@pytest.mark.parametrize("view", ["changelist", "add"])
def test_every_admin_page_loads(staff_client, view):
    CaptionPairFactory()
    for model in registered_models():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}")
        response = staff_client.get(url)
        assert response.status_code == 200, url


def test_pair_list_shows_thumbnails_and_filters(staff_client):
    pair = CaptionPairFactory(caption="a dog on a skateboard")
    response = staff_client.get(reverse("admin:ratinggame_captionpair_changelist"), {"q": "skateboard"})
    body = response.content.decode()
    assert pair.image.file.url in body
    assert "a dog on a skateboard" in body
    assert "By pool" in body or "pool" in body
    response = staff_client.get(reverse("admin:ratinggame_captionpair_changelist"), {"q": "nothing-like-it"})
    assert "a dog on a skateboard" not in response.content.decode()


def test_pair_change_page_loads(staff_client):
    pair = TutorialPairFactory()
    response = staff_client.get(reverse("admin:ratinggame_captionpair_change", args=[pair.pk]))
    assert response.status_code == 200


def test_admin_image_upload_is_validated_and_stored(staff_client):
    url = reverse("admin:ratinggame_image_add")
    response = staff_client.post(url, {"upload": SimpleUploadedFile("ok.png", png_bytes(3)), "source": "lab"})
    assert response.status_code == 302
    image = Image.objects.get()
    assert (image.width, image.height) == (32, 24)
    assert image.original_name == "ok.png"

    response = staff_client.post(url, {"upload": SimpleUploadedFile("again.png", png_bytes(3)), "source": "x"})
    assert response.status_code == 200
    assert "already stored as image" in response.content.decode()

    response = staff_client.post(url, {"upload": SimpleUploadedFile("fake.png", b"GIF89a nonsense"), "source": ""})
    assert "not an image" in response.content.decode() or "damaged" in response.content.decode()
    assert Image.objects.count() == 1


def test_admin_pair_form_applies_the_import_rules(staff_client):
    image = CaptionPairFactory().image
    url = reverse("admin:ratinggame_captionpair_add")
    data = {
        "image": image.pk,
        "caption": "a caption for the tutorial",
        "source": "other",
        "pool": "tutorial",
        "references": "[]",
        "expert_rating": "",
        "explanation": "",
        "display_order": 1,
    }
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "tutorial pairs need an expert_rating" in response.content.decode()
    data.update(expert_rating=4, explanation="Objects and where they are; no event.")
    response = staff_client.post(url, data)
    assert response.status_code == 302
    assert CaptionPair.objects.filter(pool="tutorial").count() == 1


def test_non_staff_cannot_open_admin(client):
    client.force_login(UserFactory(username="rater"))
    response = client.get(reverse("admin:ratinggame_captionpair_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_admin_edit_of_a_pair_never_overwrites_the_game_aggregates(staff_client):
    from ratinggame.models import CaptionPair as Pair

    pair = CaptionPairFactory(caption="before")
    url = reverse("admin:ratinggame_captionpair_change", args=[pair.pk])
    form_page = staff_client.get(url)
    assert form_page.status_code == 200
    # A rating lands while the admin has the form open.
    Pair.objects.filter(pk=pair.pk).update(human_count=2, human_sum=7, human_sumsq=25, primes=[3.5, 4.0])
    data = {
        "image": pair.image_id,
        "caption": "after",
        "source": "other",
        "pool": "game",
        "references": "[]",
        "expert_rating": "",
        "explanation": "",
        "display_order": 1,
    }
    assert staff_client.post(url, data).status_code == 302
    pair.refresh_from_db()
    assert pair.caption == "after"
    assert (pair.human_count, pair.human_sum, pair.human_sumsq, pair.primes) == (2, 7, 25, [3.5, 4.0])
