"""The Django admin: every model's list and add pages load, with thumbnails, search and filters,
and image uploads go through the same checks as the importer."""

import pytest
from django.contrib import admin
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ratinggame.admin import CaptionPairAdmin
from ratinggame.models import CaptionPair, Image
from tests.factories import CaptionPairFactory, TutorialPairFactory, UserFactory, png_bytes

pytestmark = pytest.mark.django_db


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
def test_every_admin_page_loads(staff_client, rf, view):
    CaptionPairFactory()
    request = rf.get("/admin/")
    request.user = UserFactory(username="boss")  # the staff user of staff_client
    for model in registered_models():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}")
        response = staff_client.get(url)
        # Read-only admins (audit logs) refuse the add page; every other page loads.
        refused = view == "add" and not admin.site._registry[model].has_add_permission(request)
        assert response.status_code == (403 if refused else 200), url


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


def test_pair_page_shows_each_prime_with_the_models_explanation(staff_client):
    from scoring.models import ModelRating

    pair = CaptionPairFactory(caption="a dog on a skateboard")
    ModelRating.objects.create(pair=pair, slot=1, model_identity="clip", metric="clip_s", raw_score=0.71, value=2.68)
    ModelRating.objects.create(
        pair=pair,
        slot=2,
        model_identity="/models/llava weights=abc",
        metric="fleur",
        raw_score=0.8125,
        value=4.25,
        explanation="The caption names the dog but <b>not</b> the park.",
    )
    body = staff_client.get(reverse("admin:ratinggame_captionpair_change", args=[pair.pk])).content.decode()
    assert "Model primes" in body
    assert "<td>2</td><td>FLEUR<br><small>/models/llava weights=abc</small></td><td>0.8125</td><td>4.25</td>" in body
    assert "The caption names the dog but &lt;b&gt;not&lt;/b&gt; the park." in body  # escaped


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
    assert staff_client.post(url, pair_form_data(pair.image, caption="after")).status_code == 302
    pair.refresh_from_db()
    assert pair.caption == "after"
    assert (pair.human_count, pair.human_sum, pair.human_sumsq, pair.primes) == (2, 7, 25, [3.5, 4.0])


def pair_form_data(image, **changes):
    data = {
        "image": image.pk,
        "caption": "a caption written in the admin",
        "source": "other",
        "pool": "game",
        "references": "[]",
        "expert_rating": "",
        "explanation": "",
        "display_order": 1,
    }
    return {**data, **changes}


@pytest.mark.parametrize(
    ("pool", "status"), [("tutorial", "not_needed"), ("probation", "not_needed"), ("game", "pending")]
)
def test_admin_created_pairs_get_the_importers_priming_status(staff_client, pool, status):
    image = CaptionPairFactory().image
    data = pair_form_data(image, pool=pool, expert_rating=3, explanation="Objects right, no places.")
    response = staff_client.post(reverse("admin:ratinggame_captionpair_add"), data)
    assert response.status_code == 302
    assert CaptionPair.objects.get(pool=pool, caption=data["caption"]).priming_status == status


def test_moving_a_pair_into_the_game_queues_it_for_priming_and_out_of_it_stops_waiting(
    staff_client, django_capture_on_commit_callbacks, sent_tasks
):
    pair = TutorialPairFactory()
    assert pair.priming_status == "not_needed"
    url = reverse("admin:ratinggame_captionpair_change", args=[pair.pk])
    data = pair_form_data(
        pair.image, caption=pair.caption, pool="game", expert_rating=pair.expert_rating, explanation="x"
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert staff_client.post(url, data).status_code == 302
    pair.refresh_from_db()
    assert pair.priming_status == "pending" and sent_tasks == [("scoring.tasks.prime_pairs", ([pair.pk],))]
    CaptionPair.objects.filter(pk=pair.pk).update(priming_status="failed", priming_error="boom")
    assert staff_client.post(url, {**data, "pool": "probation"}).status_code == 302
    pair.refresh_from_db()
    assert (pair.priming_status, pair.priming_error) == ("not_needed", "")


@pytest.mark.parametrize("value", ["6", "0", "-1"])
def test_admin_expert_rating_out_of_range_gets_the_importers_message(staff_client, value):
    image = CaptionPairFactory().image
    data = pair_form_data(image, pool="tutorial", expert_rating=value, explanation="Why it is a 5.")
    response = staff_client.post(reverse("admin:ratinggame_captionpair_add"), data)
    body = response.content.decode()
    assert response.status_code == 200
    assert f"expert_rating {value} is outside 1-5" in body
    assert "Constraint" not in body and "greater than or equal" not in body
    assert not CaptionPair.objects.filter(pool="tutorial").exists()


def test_pair_list_shows_priming_status_and_error_and_filters_by_status(staff_client):
    failed = CaptionPairFactory(
        caption="the failed one", priming_status="failed", priming_error="image could not be decoded: broken PNG"
    )
    done = CaptionPairFactory(caption="the primed one", priming_status="done")
    url = reverse("admin:ratinggame_captionpair_changelist")
    body = staff_client.get(url).content.decode()
    assert "image could not be decoded: broken PNG" in body
    assert "Failed" in body and "Done" in body
    body = staff_client.get(url, {"priming_status__exact": "failed"}).content.decode()
    assert failed.caption in body and done.caption not in body


def test_retry_priming_action_requeues_failed_pairs_after_commit(
    staff_client, django_capture_on_commit_callbacks, sent_tasks
):
    failed = CaptionPairFactory(priming_status="failed", priming_error="priming model could not be loaded: x")
    done = CaptionPairFactory(priming_status="done", primes=[3.0, 3.5])
    tutorial = TutorialPairFactory()
    data = {"action": "retry_priming", "_selected_action": [failed.pk, done.pk, tutorial.pk]}
    with django_capture_on_commit_callbacks() as callbacks:
        response = staff_client.post(reverse("admin:ratinggame_captionpair_changelist"), data, follow=True)
        assert sent_tasks == []  # nothing is sent before the transaction commits
    assert len(callbacks) == 1
    callbacks[0]()
    assert sent_tasks == [("scoring.tasks.prime_pairs", ([failed.pk],))]
    for pair in (failed, done, tutorial):
        pair.refresh_from_db()
    assert (failed.priming_status, failed.priming_error) == ("pending", "")
    assert done.priming_status == "done" and done.primes == [3.0, 3.5]
    assert tutorial.priming_status == "not_needed"
    assert "1 pair(s) queued for priming. 2 left alone" in response.content.decode()


def rated_game_pair():
    from tests.factories import RaterProfileFactory, rating_record

    pair = CaptionPairFactory(caption="a dog on a skateboard", references=["a dog rides a board"], primes=[3.0, 4.0])
    rating_record(rater=RaterProfileFactory().user, pair=pair, value=4, stage="game")
    return pair


def test_a_rated_pairs_content_and_pool_are_read_only_in_the_admin(staff_client):
    pair = rated_game_pair()
    before = (pair.image_id, pair.caption, pair.references, pair.pool)
    other_image = CaptionPairFactory().image
    url = reverse("admin:ratinggame_captionpair_change", args=[pair.pk])
    page = staff_client.get(url).content.decode()
    for field in ("image", "caption", "references", "pool"):
        assert f'name="{field}"' not in page, field
    assert 'name="explanation"' in page  # what raters were not shown stays editable

    data = pair_form_data(
        other_image, caption="a cat on a sofa", pool="probation", references='["a cat"]', explanation="Fixed."
    )
    assert staff_client.post(url, {**data, "expert_rating": 4}).status_code == 302
    pair.refresh_from_db()
    assert (pair.image_id, pair.caption, pair.references, pair.pool) == before
    assert (pair.explanation, pair.expert_rating) == ("Fixed.", 4)


def test_a_pair_rated_after_the_form_was_opened_refuses_the_content_edit(rf):
    from tests.factories import RaterProfileFactory, rating_record

    pair = CaptionPairFactory(caption="before")
    request = rf.post("/admin/")
    request.user = UserFactory(is_staff=True, is_superuser=True)
    # The admin's form as the POST builds it, while the pair is still unrated.
    form = CaptionPairAdmin(CaptionPair, admin.site).get_form(request, pair, change=True)(
        data=pair_form_data(pair.image, caption="after"), instance=pair
    )
    assert "caption" in form.fields
    rating_record(rater=RaterProfileFactory().user, pair=pair, value=3, stage="game")  # lands meanwhile
    assert not form.is_valid()
    assert "can no longer change" in str(form.errors)
    pair.refresh_from_db()
    assert pair.caption == "before"


def test_an_unrated_pairs_caption_can_still_be_corrected(staff_client):
    pair = CaptionPairFactory(caption="a dgo on a skateboard")
    url = reverse("admin:ratinggame_captionpair_change", args=[pair.pk])
    assert staff_client.post(url, pair_form_data(pair.image, caption="a dog on a skateboard")).status_code == 302
    pair.refresh_from_db()
    assert pair.caption == "a dog on a skateboard"
