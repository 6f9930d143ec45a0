"""Entry links from recruitment platforms (issue 20, item 2; SPEC 7): one external id on one
platform is one rater, resumed on any device; ids are checked; a visit without an id or a preview
creates no one; a closed study or a platform the study does not take refuses."""

from urllib.parse import unquote, urlencode

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotators.journey import Step
from annotators.models import Participation, RaterProfile
from annotators.progress import current_step
from annotators.roles import ANNOTATOR, has_role
from annotators.study.entry import PLATFORMS
from tests.ratinggame.api_helpers import admin, token_client

pytestmark = pytest.mark.django_db

PID = "5f4d3c2b1a0e9f8d7c6b5a49"  # 24 hex characters, as Prolific's are


def enter(client: Client, **params):
    return client.get(reverse("annotators:study_enter"), params)


def prolific(pid: str = PID, session: str = "sess-1"):
    return {"PROLIFIC_PID": pid, "STUDY_ID": "study-A", "SESSION_ID": session}


def test_first_visit_creates_a_rater_without_password_and_goes_to_consent(client):
    answer = enter(client, **prolific())
    assert answer.status_code == 302 and answer["Location"] == reverse("annotators:play")
    assert client.get(answer["Location"])["Location"] == reverse("annotators:consent")
    participation = Participation.objects.get()
    assert (participation.platform, participation.external_id) == ("prolific", PID)
    assert (participation.study_id, participation.session_id) == ("study-A", "sess-1")
    user = participation.profile.user
    assert not user.has_usable_password() and has_role(user, ANNOTATOR)
    assert PID not in user.username  # the id lives on the participation only
    assert current_step(user) == Step.CONSENT


def test_the_same_id_on_a_second_device_resumes_the_same_rater(client):
    enter(client, **prolific())
    client.post(reverse("annotators:consent"), {"agree": "on"})
    other_device = Client()
    answer = enter(other_device, **prolific(session="sess-2"))
    assert answer.status_code == 302
    assert Participation.objects.count() == 1 and RaterProfile.objects.count() == 1
    assert Participation.objects.get().session_id == "sess-2"
    # Consent given on the first device: the second goes on from there, not to consent again.
    assert other_device.get(reverse("annotators:play"))["Location"] != reverse("annotators:consent")
    assert other_device.get(reverse("annotators:me")).status_code == 200


def test_a_second_id_is_a_second_rater(client):
    enter(client, **prolific())
    enter(Client(), **prolific(pid="6a" * 12))
    assert Participation.objects.count() == 2
    assert len({p.profile.user_id for p in Participation.objects.all()}) == 2


@pytest.mark.parametrize(
    "params, words",
    [
        ({"PROLIFIC_PID": "x" * 65}, "65 characters"),
        ({"PROLIFIC_PID": ""}, "empty"),
        ({"PROLIFIC_PID": "abc def"}, "PROLIFIC_PID"),
        ({"PROLIFIC_PID": "<script>"}, "PROLIFIC_PID"),
        ({"PROLIFIC_PID": PID, "SESSION_ID": "a/b"}, "SESSION_ID"),
        ({"PROLIFIC_PID": PID, "STUDY_ID": "s" * 70}, "STUDY_ID"),
    ],
)
def test_a_malformed_id_is_refused_with_a_clear_400_and_creates_nothing(client, params, words):
    answer = enter(client, **params)
    assert answer.status_code == 400
    page = answer.content.decode()
    assert 'data-code="invalid_id"' in page and words in page and "1 to 64 letters" in page
    assert not get_user_model().objects.exists()


def test_the_longest_and_shortest_ids_are_taken(client):
    assert enter(client, PROLIFIC_PID="a" * 64).status_code == 302
    assert enter(Client(), PROLIFIC_PID="Z").status_code == 302
    assert Participation.objects.count() == 2


@pytest.mark.parametrize("params", [{}, {"utm_source": "mail"}])
def test_a_visit_without_an_id_shows_the_study_and_creates_no_one(client, params):
    answer = enter(client, **params)
    assert answer.status_code == 200 and 'id="entry-preview"' in answer.content.decode()
    assert not get_user_model().objects.exists()


def test_a_platform_the_study_does_not_take_is_refused(client, settings):
    answer = enter(client, workerId="A1B2C3", assignmentId="3XYZ", hitId="H1")
    assert answer.status_code == 403 and 'data-code="platform_not_enabled"' in answer.content.decode()
    assert not get_user_model().objects.exists()


def test_mechanical_turk_preview_creates_no_one_and_a_worker_is_taken(client, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PLATFORMS": ["prolific", "mturk"]}
    preview = enter(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1", workerId="A1B2C3")
    assert preview.status_code == 200 and 'id="entry-preview"' in preview.content.decode()
    assert not get_user_model().objects.exists()
    elsewhere = enter(client, workerId="A1B2C3", assignmentId="3XYZ", turkSubmitTo="https://evil.example")
    assert elsewhere.status_code == 400 and not get_user_model().objects.exists()
    taken = enter(
        client, workerId="A1B2C3", assignmentId="3XYZ", hitId="H1", turkSubmitTo="https://workersandbox.mturk.com"
    )
    assert taken.status_code == 302
    participation = Participation.objects.get()
    assert (participation.platform, participation.external_id, participation.assignment_id) == (
        "mturk",
        "A1B2C3",
        "3XYZ",
    )


@pytest.mark.parametrize(
    "return_to",
    [
        "https://evil.example%5C@www.mturk.com",  # a browser reads the backslash as "/": host evil.example
        "https://evil.example\\@www.mturk.com",
        "https://evil.example@www.mturk.com",
        "https://www.mturk.com@evil.example",
        "https://www.mturk.com/\\evil.example",
        "https://www.mturk.com:8443",
        "https://www.mturk.com/anything",
        "https://www.mturk.com\t",
        "https://www.mturk.com/" + "x" * 250,  # over the column's 200 characters: a 500 before
        "http://www.mturk.com",
    ],
)
def test_a_return_address_a_browser_could_read_as_another_host_is_refused_and_never_stored(client, settings, return_to):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PLATFORMS": ["mturk"]}
    refused = enter(client, workerId="A1B2C3", assignmentId="3XYZ", turkSubmitTo=unquote(return_to))
    assert refused.status_code == 400 and 'data-code="invalid_return"' in refused.content.decode()
    assert not Participation.objects.exists() and not get_user_model().objects.exists()


def test_a_stored_return_address_outside_the_allow_list_sends_no_completion_code_away():
    mturk = PLATFORMS["mturk"]
    stored = Participation(assignment_id="3XYZ", return_to="https://evil.example\\@www.mturk.com")
    assert mturk.return_url("CODE1", stored, None) == ""
    stored.return_to = "https://www.mturk.com"
    assert mturk.return_url("CODE1", stored, None) == (
        "https://www.mturk.com/mturk/externalSubmit?assignmentId=3XYZ&code=CODE1"
    )


def test_a_signed_in_account_is_not_switched_to_a_participant_by_a_get(client):
    staff = admin()
    client.force_login(staff)
    asked = enter(client, **prolific())
    assert asked.status_code == 200 and 'id="entry-switch"' in asked.content.decode()
    assert not Participation.objects.exists()
    assert client.get(reverse("annotators:me")).wsgi_request.user == staff

    forged = Client(enforce_csrf_checks=True)
    forged.force_login(staff)
    url = reverse("annotators:study_enter") + "?" + urlencode(prolific())
    assert forged.post(url).status_code == 403  # no CSRF token: a cross-site form
    assert not Participation.objects.exists()

    confirmed = client.post(url)
    assert confirmed.status_code == 302 and confirmed["Location"] == reverse("annotators:play")
    participant = Participation.objects.get().profile.user
    assert participant != staff and client.get(reverse("annotators:me")).wsgi_request.user == participant
    # The participant back through their own link while signed in goes straight on.
    again = enter(client, **prolific(session="sess-2"))
    assert again.status_code == 302 and Participation.objects.get().session_id == "sess-2"


def test_the_generic_platform_reads_the_configured_parameter(client, settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PLATFORMS": ["generic"], "GENERIC_ID_PARAM": "cr_id"}
    assert enter(client, cr_id="connect-42").status_code == 302
    assert Participation.objects.get().external_id == "connect-42"
    assert enter(Client(), **prolific()).status_code == 403  # Prolific is not enabled here


def test_a_closed_study_refuses_a_newcomer_but_resumes_a_rater(client, settings):
    enter(client, **prolific())
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "CLOSED": True}
    newcomer = enter(Client(), **prolific(pid="7b" * 12))
    assert newcomer.status_code == 403 and 'data-code="study_closed"' in newcomer.content.decode()
    assert Participation.objects.count() == 1
    assert enter(Client(), **prolific()).status_code == 302


def test_a_withdrawn_rater_cannot_come_back_through_the_link(client):
    enter(client, **prolific())
    client.post(reverse("annotators:consent"), {"agree": "on"})
    client.post(reverse("data_delete"), {"confirm": "yes"})
    assert RaterProfile.objects.get().withdrawn_at is not None
    again = enter(Client(), **prolific())
    assert again.status_code == 403 and 'data-code="withdrawn"' in again.content.decode()
    assert Participation.objects.count() == 1


def test_staff_see_the_platform_and_external_id_on_the_rater_page(client):
    enter(Client(), **prolific())
    client.force_login(admin())
    profile = RaterProfile.objects.get(participation__isnull=False)
    page = client.get(reverse("staff:rater", args=[profile.pk])).content.decode()
    assert "Prolific" in page and PID in page and "sess-1" in page


def test_staff_read_the_platform_and_id_in_the_raters_api_until_the_rater_withdraws(client):
    enter(client, **prolific())
    staff_api = token_client(admin())
    profile = RaterProfile.objects.get(participation__isnull=False)
    body = staff_api.get(f"/api/admin/raters/{profile.pk}/").json()
    assert (body["platform"], body["participant_id"]) == ("prolific", PID)
    client.post(reverse("annotators:consent"), {"agree": "on"})
    client.post(reverse("data_delete"), {"confirm": "yes"})
    body = staff_api.get(f"/api/admin/raters/{profile.pk}/").json()
    assert (body["platform"], body["participant_id"]) == ("", "")
