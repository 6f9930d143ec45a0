"""Model primes are read-only in the Django admin: ``CaptionPair.primes`` (what raters were
scored against) is written with them by the priming worker alone."""

import pytest
from django.urls import reverse

from scoring.models import ModelRating
from tests.factories import CaptionPairFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def prime():
    pair = CaptionPairFactory(primes=[2.68, 4.25], priming_status="done")
    ModelRating.objects.create(pair=pair, slot=2, model_identity="clip", metric="clip_s", raw_score=0.8, value=4.25)
    return ModelRating.objects.create(
        pair=pair, slot=1, model_identity="clip", metric="clip_s", raw_score=0.71, value=2.68
    )


def test_a_prime_cannot_be_changed_added_or_deleted_in_the_admin(superuser_client, prime):
    change = reverse("admin:scoring_modelrating_change", args=[prime.pk])
    page = superuser_client.get(change)
    assert page.status_code == 200  # shown to read
    assert 'name="value"' not in page.content.decode()

    edit = {"pair": prime.pair_id, "slot": 1, "model_identity": "clip", "metric": "clip_s", "raw_score": 1, "value": 5}
    assert superuser_client.post(change, edit).status_code == 403
    assert superuser_client.post(reverse("admin:scoring_modelrating_add"), {**edit, "slot": 3}).status_code == 403
    delete = reverse("admin:scoring_modelrating_delete", args=[prime.pk])
    assert superuser_client.post(delete, {"post": "yes"}).status_code == 403
    changelist = reverse("admin:scoring_modelrating_changelist")
    superuser_client.post(changelist, {"action": "delete_selected", "_selected_action": [prime.pk], "post": "yes"})

    prime.refresh_from_db()
    prime.pair.refresh_from_db()
    assert (prime.raw_score, prime.value) == (0.71, 2.68)
    assert ModelRating.objects.filter(pair=prime.pair).count() == 2
    assert prime.pair.primes == [2.68, 4.25]
