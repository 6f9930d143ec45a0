"""The REST API: schema, token auth, a script playing the journey, errors, lists, uploads, exports, admin."""

import hypothesis
import pytest
import schemathesis
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from annotators.models import RaterAction, RaterProfile, RaterState
from ratinggame import game
from ratinggame.models import Assignment, CaptionPair, Image, Pool, PrimingStatus, Rating
from scoring.models import ExportJob
from tests.conftest import FULL_TESTS
from tests.factories import CaptionPairFactory, TutorialPairFactory, png_bytes, rating_make
from tests.ratinggame.api_helpers import (
    PASSWORD,
    admin,
    annotator,
    error_of,
    image_file,
    researcher,
    token_client,
    zip_bytes,
)

pytestmark = pytest.mark.django_db

SERVED_KEYS = {
    "assignment_id",
    "stage",
    "image_url",
    "image_width",
    "image_height",
    "caption",
    "served_at",
    "min_submit_at",
    "expires_at",
    "position",
    "total",
}


@pytest.fixture(autouse=True)
def _fresh_cache_and_no_wait(settings):
    # Throttle and log-in counters live in the cache; the 3-second floor is for people.
    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    yield
    cache.clear()


# --- Schema and documentation ------------------------------------------------------------------


def test_schema_generates_and_validates_without_warnings(tmp_path):
    target = tmp_path / "schema.yml"
    # --fail-on-warn turns any drf-spectacular warning (an untyped field, an unnamed enum) into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    text = target.read_text()
    for path in ("/api/game/next:", "/api/game/submit:", "/api/pairs/import:", "/api/exports/{id}/download:"):
        assert path in text


def test_schema_is_served_and_the_documentation_pages_use_local_assets(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert schema.json()["openapi"].startswith("3.")
    for page in ("/api/docs/", "/api/redoc/"):
        html = client.get(page).content.decode()
        assert "/static/drf_spectacular_sidecar/" in html, page
        assert "cdn.jsdelivr.net" not in html and "unpkg.com" not in html, page


# --- Token authentication -------------------------------------------------------------------------


def test_token_exchange_authenticates_scripts_and_can_be_revoked():
    user = annotator(username="scripted")
    client = APIClient()
    answer = client.post("/api/auth/token", {"username": "scripted", "password": PASSWORD}, format="json")
    assert answer.status_code == 200
    key = answer.json()["token"]
    assert key == Token.objects.get(user=user).key

    anonymous = client.get("/api/game/step")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == "Token"
    assert error_of(anonymous)["code"] == "not_authenticated"

    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/game/step").json()["step"] == "tutorial"
    assert client.delete("/api/auth/token").status_code == 204
    assert client.get("/api/game/step").status_code == 401


def test_token_exchange_with_a_wrong_password_is_a_400_error_body():
    annotator(username="scripted")
    answer = APIClient().post("/api/auth/token", {"username": "scripted", "password": "nope"}, format="json")
    assert answer.status_code == 400
    error = error_of(answer)
    assert error["code"] == "invalid"
    assert "Unable to log in" in error["message"]


# --- A non-browser client plays the journey --------------------------------------------------------


def test_a_script_signs_up_and_plays_tutorial_then_game_through_the_api():
    experts = [2, 4, 5]
    for order, expert in enumerate(experts):
        TutorialPairFactory(expert_rating=expert, display_order=order, explanation=f"why {order}")
    game_pairs = [CaptionPairFactory(pool=Pool.GAME, primes=[2.0, 4.0]) for _ in range(2)]

    client = APIClient()
    signup = client.post("/api/auth/signup", {"username": "bot", "password": PASSWORD}, format="json")
    assert signup.status_code == 201
    client.credentials(HTTP_AUTHORIZATION=f"Token {signup.json()['token']}")

    assert client.get("/api/game/step").json()["step"] == "consent"
    refused = client.post("/api/game/next", format="json")
    assert (refused.status_code, error_of(refused)["code"]) == (403, "no_consent")
    assert client.post("/api/game/consent", {"agree": False}, format="json").status_code == 400
    step = client.post("/api/game/consent", {"agree": True}, format="json").json()
    # 3 tutorial pairs: pass mark scaled to ceil(10 * 3 / 10) = 3 of 6 points.
    assert step["step"] == "tutorial"
    assert step["tutorial"] == {"done": 0, "total": 3, "score": 0, "max_score": 6, "pass_mark": 3}

    for position, expert in enumerate(experts, start=1):
        served = client.post("/api/game/next", format="json").json()
        assert set(served) == SERVED_KEYS
        assert (served["stage"], served["position"], served["total"]) == ("tutorial", position, 3)
        # Reload-safe: asking again answers the same open assignment.
        assert client.post("/api/game/next", format="json").json()["assignment_id"] == served["assignment_id"]
        feedback = client.post(
            "/api/game/submit", {"assignment_id": served["assignment_id"], "value": expert}, format="json"
        ).json()
        # Exact agreement with the expert: 2 - |expert - rating| = 2 points.
        assert (feedback["points"], feedback["reference"], feedback["stage_total"]) == (2, expert, 2 * position)
    assert feedback["transition"] == "tutorial_passed"

    assert client.get("/api/game/step").json()["step"] == "game"
    served = client.post("/api/game/next", format="json").json()
    assert served["stage"] == "game"
    assert Assignment.objects.get(pk=served["assignment_id"]).pair_id in {p.pk for p in game_pairs}
    feedback = client.post(
        "/api/game/submit", {"assignment_id": served["assignment_id"], "value": 4}, format="json"
    ).json()
    # First human rating of a primed pair: scored against the primes (2, 4) -> consensus 3.
    assert feedback["stage"] == "game" and feedback["reference"] == 3 and feedback["already_rated"] is False
    assert feedback["window"] == {"count": 1, "points": feedback["points"], "size": 20, "needed": 25}
    again = client.get(f"/api/game/feedback/{served['assignment_id']}").json()
    assert again == {key: value for key, value in feedback.items() if key not in {"already_rated", "session_ended"}}
    game_step = client.get("/api/game/step").json()["game"]
    assert game_step["ratings"] == 1 and game_step["window"]["count"] == 1
    assert Rating.objects.filter(rater__username="bot").count() == 4


def test_submit_ignores_client_times_and_refuses_non_ratings(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 3}
    CaptionPairFactory(pool=Pool.GAME)
    client = token_client(annotator(state=RaterState.GAME))
    served = client.post("/api/game/next", format="json").json()
    forged = {"assignment_id": served["assignment_id"], "value": 3, "served_at": "2000-01-01T00:00:00Z"}
    early = client.post("/api/game/submit", forged, format="json")
    assert (early.status_code, error_of(early)["code"]) == (400, "too_early")
    for value in (0, 6, 3.5, "x", "", True):
        answer = client.post(
            "/api/game/submit", {"assignment_id": served["assignment_id"], "value": value}, format="json"
        )
        assert (answer.status_code, error_of(answer)["code"]) == (400, "invalid_value"), value
    bad_id = client.post("/api/game/submit", {"assignment_id": "1", "value": 3}, format="json")
    assert (bad_id.status_code, error_of(bad_id)["code"]) == (400, "invalid_value")
    assert not Rating.objects.exists()


def test_a_submission_with_next_answers_the_feedback_and_the_next_pair_in_one_request():
    for _ in range(2):
        CaptionPairFactory(pool=Pool.GAME, primes=[2.0, 4.0])
    client = token_client(annotator(state=RaterState.GAME))
    served = client.post("/api/game/next", format="json").json()
    submission = {"assignment_id": served["assignment_id"], "value": 4, "next": True}
    answer = client.post("/api/game/submit", submission, format="json")
    assert answer.status_code == 200
    body = answer.json()
    # The feedback as a plain submission answers it, and the next pair as POST next serves it:
    # only what a rater may see before rating it.
    assert {
        key: value for key, value in body.items() if key not in {"next", "already_rated", "session_ended"}
    } == client.get(f"/api/game/feedback/{served['assignment_id']}").json()
    following = body["next"]
    assert set(following) == SERVED_KEYS
    assert following["stage"] == "game" and following["caption"] != served["caption"]
    assert client.post("/api/game/next", format="json").json() == following  # the open assignment
    # Submitted again: the first feedback, marked as already rated, and the same open pair.
    assert client.post("/api/game/submit", submission, format="json").json() == {**body, "already_rated": True}
    # Nothing left after the last pair.
    last = {"assignment_id": following["assignment_id"], "value": 2, "next": True}
    assert client.post("/api/game/submit", last, format="json").json()["next"] is None
    # "next" must be a boolean; without it, the answer is the feedback alone.
    refused = client.post("/api/game/submit", {**last, "next": "yes"}, format="json")
    assert (refused.status_code, error_of(refused)["code"]) == (400, "invalid")
    plain = client.post("/api/game/submit", {**last, "next": False}, format="json").json()
    assert "next" not in plain and plain["assignment_id"] == following["assignment_id"]


def test_a_second_submission_of_a_rated_pair_answers_the_stored_rating_and_says_it_was_not_taken():
    pair = CaptionPairFactory(pool=Pool.GAME, primes=[4.0, 4.0])
    client = token_client(annotator(state=RaterState.GAME))
    served = client.post("/api/game/next", format="json").json()
    # Two tabs (or scripts) rating the same assignment: the first value is stored.
    first = client.post("/api/game/submit", {"assignment_id": served["assignment_id"], "value": 4}, format="json")
    second = client.post("/api/game/submit", {"assignment_id": served["assignment_id"], "value": 1}, format="json")
    assert first.status_code == second.status_code == 200
    assert first.json()["already_rated"] is False
    # The second answer is the first one's feedback (rating 4, 2 points), flagged: its 1 was not taken.
    assert second.json() == {**first.json(), "already_rated": True}
    assert list(Rating.objects.filter(pair=pair).values_list("value", flat=True)) == [4]


def test_token_requests_see_a_role_change_at_once():
    user = annotator(state=RaterState.GAME)
    client = token_client(user)
    assert client.get("/api/game/step").status_code == 200
    user.groups.clear()
    refused = client.get("/api/game/step")
    assert (refused.status_code, error_of(refused)["code"]) == (403, "permission_denied")
    user.is_active = False
    user.save()
    assert client.get("/api/game/step").status_code == 401


# --- What an annotator never sees ---------------------------------------------------------------------


def test_an_annotator_never_sees_primes_consensus_or_other_raters_ratings():
    pair = CaptionPairFactory(pool=Pool.GAME, primes=[1.0, 5.0], priming_status=PrimingStatus.DONE)
    other = annotator(state=RaterState.GAME)
    other_rating = rating_make(rater=other, pair=pair, value=5, stage="game")
    client = token_client(annotator(state=RaterState.GAME))

    for path in ("/api/pairs/", f"/api/pairs/{pair.pk}/", "/api/ratings/", f"/api/ratings/{other_rating.pk}/"):
        answer = client.get(path)
        assert (answer.status_code, error_of(answer)["code"]) == (403, "permission_denied"), path
    foreign = client.get(f"/api/game/feedback/{other_rating.assignment_id}")
    assert (foreign.status_code, error_of(foreign)["code"]) == (403, "not_yours")

    served = client.post("/api/game/next", format="json").json()
    assert set(served) == SERVED_KEYS  # no consensus, prime, expert rating or count among them
    # Before rating it, the rater's own pair has no feedback (which would show the consensus).
    before = client.get(f"/api/game/feedback/{served['assignment_id']}")
    assert (before.status_code, error_of(before)["code"]) == (404, "not_found")


# --- Errors ------------------------------------------------------------------------------------------


def test_every_error_has_the_same_body_shape(settings):
    client = token_client(annotator())
    cases = [
        (APIClient().get("/api/pairs/"), 401, "not_authenticated"),
        (client.get("/api/pairs/"), 403, "permission_denied"),
        (client.get("/api/no/such/endpoint"), 404, "not_found"),
        (client.get("/api/game/submit"), 405, "method_not_allowed"),
        (client.post("/api/game/consent", "{not json", content_type="application/json"), 400, "parse_error"),
        (client.post("/api/game/consent", {}, format="json"), 400, "invalid"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, (code, response.content)
        assert error_of(response)["code"] == code
    invalid = error_of(cases[-1][0])
    assert invalid["details"] == {"agree": ["This field is required."]}


def test_throttled_requests_answer_429_with_retry_after(monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "user": "2/min"})
    client = token_client(annotator())
    statuses = [client.get("/api/game/step").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    throttled = client.get("/api/game/step")
    error = error_of(throttled)
    assert error["code"] == "throttled"
    assert 0 < error["details"]["retry_after_seconds"] <= 60
    assert 0 < int(throttled["Retry-After"]) <= 60


# --- Researchers: pairs and ratings ----------------------------------------------------------------------


def test_pairs_are_paginated_and_filtered():
    tutorial = [TutorialPairFactory() for _ in range(2)]
    unrated = [CaptionPairFactory(pool=Pool.GAME, source="coco") for _ in range(3)]
    rated = CaptionPairFactory(pool=Pool.GAME, source="pythia", priming_status=PrimingStatus.DONE, primes=[3.0, 3.5])
    CaptionPair.objects.filter(pk=rated.pk).update(human_count=3, human_sum=11, human_sumsq=41)
    client = token_client(researcher())

    page = client.get("/api/pairs/", {"page_size": 4}).json()
    assert page["count"] == 6 and len(page["results"]) == 4 and page["next"] and page["previous"] is None
    last = client.get(page["next"]).json()
    assert len(last["results"]) == 2 and last["next"] is None

    def ids(**query) -> set[int]:
        return {row["id"] for row in client.get("/api/pairs/", query).json()["results"]}

    assert ids(pool="tutorial") == {p.pk for p in tutorial}
    assert ids(source="coco") == {p.pk for p in unrated}
    assert ids(min_ratings=3) == {rated.pk}
    assert ids(primed="true") == {rated.pk}
    assert ids(primed="false", pool="game") == {p.pk for p in unrated}
    row = client.get(f"/api/pairs/{rated.pk}/").json()
    # 3 ratings summing to 11: mean 11/3 = 3.67, consensus round-half-up(3.67) = 4.
    assert row["human_count"] == 3 and row["human_mean"] == pytest.approx(11 / 3) and row["human_consensus"] == 4
    assert row["primes"] == [3.0, 3.5]
    bad = client.get("/api/pairs/", {"pool": "nonsense"})
    assert (bad.status_code, error_of(bad)["code"]) == (400, "invalid")


def test_ratings_show_rater_ids_never_usernames_and_filter_by_rater_and_stage():
    pair = CaptionPairFactory(pool=Pool.GAME)
    first, second = annotator(username="alice-rater"), annotator(username="bob-rater")
    rating_make(rater=first, pair=pair, value=2, stage="game")
    rating_make(rater=second, pair=pair, value=4, stage="game")
    rating_make(rater=first, pair=TutorialPairFactory(), value=3, stage="tutorial")
    client = token_client(researcher())
    answer = client.get("/api/ratings/")
    assert answer.json()["count"] == 3
    assert b"alice-rater" not in answer.content and b"bob-rater" not in answer.content
    rows = client.get("/api/ratings/", {"rater": first.pk, "stage": "game"}).json()["results"]
    assert [(r["rater"], r["pair"], r["value"]) for r in rows] == [(first.pk, pair.pk, 2)]


def test_ratings_filter_by_time_reads_any_iso_offset_as_utc():
    rating = rating_make(rater=annotator(), pair=CaptionPairFactory(pool=Pool.GAME), value=3, stage="game")
    client = token_client(researcher())
    # +23:13 is a valid ISO 8601 offset that PostgreSQL cannot store: it is read as UTC first.
    moment = rating.submitted_at.astimezone(timezone.get_fixed_timezone(23 * 60 + 13))
    after = client.get("/api/ratings/", {"submitted_after": moment.isoformat()})
    assert (after.status_code, after.json()["count"]) == (200, 1)
    before = client.get("/api/ratings/", {"submitted_before": moment.isoformat()})
    assert (before.status_code, before.json()["count"]) == (200, 0)
    # An instant before year 1 in UTC does not exist: the client's error, named.
    refused = client.get("/api/ratings/", {"submitted_before": "0001-01-01T00:00:00+23:00"})
    assert refused.status_code == 400
    assert "submitted_before" in refused.json()["error"]["details"]


# --- Researchers: manifest upload -------------------------------------------------------------------------


def _manifest(rows: list[str]) -> SimpleUploadedFile:
    text = "image,caption,source\n" + "\n".join(rows) + "\n"
    return SimpleUploadedFile("pairs.csv", text.encode(), content_type="text/csv")


def _stored_images(settings) -> list:
    folder = settings.MEDIA_ROOT / "images"
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_manifest_upload_with_loose_images_and_a_zip_imports_every_row(settings):
    client = token_client(researcher())
    archive = SimpleUploadedFile("more.zip", zip_bytes({"sub/c.png": png_bytes(303)}), content_type="application/zip")
    answer = client.post(
        "/api/pairs/import",
        {
            "manifest": _manifest(
                ["a.png,a cat,coco", "b.png,a dog,pythia", "a.png,another cat,other", "sub/c.png,c,"]
            ),
            "images": [image_file("a.png", 301), image_file("b.png", 302), archive],
        },
        format="multipart",
    )
    assert answer.status_code == 201, answer.content
    report = answer.json()
    assert (report["rows"], report["pairs_created"], report["images_created"], report["images_reused"]) == (4, 4, 3, 1)
    assert sorted(CaptionPair.objects.values_list("caption", flat=True)) == ["a cat", "a dog", "another cat", "c"]
    assert len(_stored_images(settings)) == 3


def test_manifest_upload_is_all_or_nothing_and_names_the_bad_rows(settings):
    client = token_client(researcher())
    answer = client.post(
        "/api/pairs/import",
        {
            "manifest": _manifest(["a.png,a cat,coco", "missing.png,a dog,coco", "a.png,,coco", "b.png,ok,martian"]),
            "images": [image_file("a.png", 311), image_file("b.png", 312)],
        },
        format="multipart",
    )
    assert answer.status_code == 400
    error = error_of(answer)
    assert error["code"] == "invalid_manifest"
    # Line numbers of the file: the header is line 1, so the data rows are lines 2..5.
    assert [row["row"] for row in error["details"]["rows"]] == [3, 4, 5]
    reasons = " | ".join(row["reason"] for row in error["details"]["rows"])
    assert "'missing.png' not found" in reasons and "caption is empty" in reasons and "unknown source" in reasons
    assert not CaptionPair.objects.exists() and not Image.objects.exists()
    assert _stored_images(settings) == []


def test_manifest_upload_refuses_zip_paths_outside_the_upload(settings, tmp_path):
    client = token_client(researcher())
    evil = zip_bytes({"../../escaped.png": png_bytes(321)})
    answer = client.post(
        "/api/pairs/import",
        {"manifest": _manifest(["escaped.png,x,coco"]), "images": [SimpleUploadedFile("evil.zip", evil)]},
        format="multipart",
    )
    assert (answer.status_code, error_of(answer)["code"]) == (400, "invalid_manifest")
    assert "not a plain relative file name" in error_of(answer)["message"]
    assert not list(tmp_path.rglob("escaped.png"))
    assert not CaptionPair.objects.exists()


def test_manifest_upload_dry_run_writes_nothing_and_annotators_may_not_upload(settings):
    upload = {"manifest": _manifest(["a.png,a cat,coco"]), "images": [image_file("a.png", 331)], "dry_run": "true"}
    answer = token_client(researcher()).post("/api/pairs/import", upload, format="multipart")
    assert answer.status_code == 200 and answer.json()["valid_rows"] == 1 and answer.json()["written"] is False
    assert not CaptionPair.objects.exists() and _stored_images(settings) == []
    refused = token_client(annotator()).post("/api/pairs/import", {}, format="multipart")
    assert refused.status_code == 403


# --- Researchers: exports ------------------------------------------------------------------------------------


def test_export_job_starts_reports_status_and_downloads(django_capture_on_commit_callbacks):
    pair = CaptionPairFactory(pool=Pool.GAME)
    for value in (3, 4, 3):
        rating_make(rater=annotator(), pair=pair, value=value, stage="game")
    client = token_client(researcher())
    invalid = client.post("/api/exports/", {"min_ratings": 0}, format="json")
    assert (invalid.status_code, error_of(invalid)["code"]) == (400, "invalid")

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        started = client.post("/api/exports/", {"min_ratings": 3, "formats": ["csv"]}, format="json")
    assert started.status_code == 202
    job = started.json()
    assert (job["status"], job["params"]["formats"], job["download_url"]) == ("queued", ["csv"], None)
    early = client.get(f"/api/exports/{job['id']}/download")
    assert (early.status_code, error_of(early)["code"]) == (409, "conflict")

    for callback in callbacks:  # what the worker would do once the job is committed
        callback()
    status = client.get(f"/api/exports/{job['id']}/").json()
    assert status["status"] == "done", status
    assert status["counts"]
    download = client.get(status["download_url"])
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    assert b"".join(download.streaming_content)[:2] == b"PK"
    assert ExportJob.objects.get(pk=job["id"]).created_by.groups.filter(name="researcher").exists()


# --- Admins: rater statistics and actions -----------------------------------------------------------------------


def test_admin_sees_rater_statistics_and_actions_are_audited():
    rater = annotator(username="flagme", state=RaterState.GAME)
    profile = RaterProfile.objects.get(user=rater)
    pair = CaptionPairFactory(pool=Pool.GAME)
    rating_make(rater=rater, pair=pair, value=4, stage="game")
    boss = admin()
    client = token_client(boss)

    rows = client.get("/api/admin/raters/", {"q": "flag"}).json()["results"]
    assert [(r["username"], r["state"], r["ratings"]) for r in rows] == [("flagme", "game", 1)]
    assert client.get("/api/admin/raters/", {"state": "nonsense"}).status_code == 400

    missing_reason = client.post(f"/api/admin/raters/{profile.pk}/suspend", {}, format="json")
    assert (missing_reason.status_code, error_of(missing_reason)["code"]) == (400, "invalid")
    done = client.post(f"/api/admin/raters/{profile.pk}/suspend", {"reason": "testing the API"}, format="json")
    assert done.status_code == 200
    assert (done.json()["from_state"], done.json()["to_state"], done.json()["actor"]) == ("game", "suspended", boss.pk)
    again = client.post(f"/api/admin/raters/{profile.pk}/suspend", {"reason": "twice"}, format="json")
    assert (again.status_code, error_of(again)["code"]) == (409, "conflict")

    action = RaterAction.objects.get()
    assert (action.actor, action.action, action.reason) == (boss, "suspend", "testing the API")
    log = client.get("/api/admin/actions/", {"rater": profile.pk}).json()["results"]
    assert [entry["id"] for entry in log] == [action.pk]
    # Suspended: the game refuses the rater.
    refused = token_client(rater).post("/api/game/next", format="json")
    assert (refused.status_code, error_of(refused)["code"]) == (403, "suspended")
    assert token_client(researcher()).get("/api/admin/raters/").status_code == 403
    assert not Assignment.objects.filter(rater=rater, submitted_at__isnull=True).exists()


# --- Schemathesis: generated requests from the schema, no server errors -----------------------------------------


@pytest.fixture
def _connections_kept_open():
    """The real WSGI handler closes database connections around each request, which would end
    the test's transaction on PostgreSQL; Django's test client disconnects them the same way."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


# Per role: the API paths it may use (anything else answers 401/403, as test_authorization
# checks route by route), and how many examples each operation gets per generation mode.
# Admins may use every path; they get fewer examples per operation so that the three runs
# together stay well under a minute on a 2-core machine.
# Examples per operation and mode: the full number in CI, fewer in a developer's `make test`.
LOCAL_EXAMPLES = 3
SCHEMATHESIS_ROLES = {
    "annotator": (("/api/auth/", "/api/game/"), 8),
    "researcher": (("/api/auth/", "/api/pairs/", "/api/ratings/", "/api/exports/"), 8),
    "admin": (("/api/",), 6),
}


def schemathesis_world(role: str) -> tuple:
    """The user of ``role`` and the ids of real objects it may reach (a served and rated pair,
    a rating, an export, a rater profile), so generated requests also get past "not found"."""
    for _ in range(3):
        CaptionPairFactory(pool=Pool.GAME)
    TutorialPairFactory()
    user = {"annotator": lambda: annotator(state=RaterState.GAME), "researcher": researcher, "admin": admin}[role]()
    rater = user if role == "annotator" else annotator(state=RaterState.GAME)
    served = game.pair_serve(rater=rater)
    feedback = game.rating_submit(rater=rater, assignment_id=served.assignment_id, value=3)
    job = ExportJob.objects.create(created_by=user, params={"formats": ["csv"]})
    ids = {
        "/api/game/feedback/{assignment_id}": served.assignment_id,
        "/api/pairs/{id}/": served.pair_id,
        "/api/ratings/{id}/": feedback.rating_id,
        "/api/exports/{id}/": job.pk,
        "/api/exports/{id}/download": job.pk,
    }
    profile_id = RaterProfile.objects.get(user=rater).pk
    return user, ids, profile_id, game.pair_serve(rater=rater).assignment_id if role == "annotator" else None


def no_server_error_run(strategy, *, examples: int, headers: dict, seen: set[int]) -> None:
    """Send ``examples`` generated cases; fail on a 5xx; add each answer's status to ``seen``."""

    @hypothesis.given(case=strategy)
    @hypothesis.settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def no_server_error(case) -> None:
        seen.add(case.call_and_validate(headers=headers, checks=[not_a_server_error]).status_code)

    no_server_error()


@pytest.mark.usefixtures("_connections_kept_open")
@pytest.mark.parametrize("role", list(SCHEMATHESIS_ROLES))
def test_generated_requests_never_get_a_server_error(role):
    """Valid and invalid requests generated from the OpenAPI schema, sent as each role through WSGI.

    Every operation is tried; those the role may use must be reached (some answer other than
    401/403): the game by an annotator in the game, the research endpoints by a researcher,
    everything by an admin. Half of the valid requests name real objects (path ids, the open
    assignment) instead of random ones. Bounded: a few examples per operation and mode (fewer
    outside CI: tests.conftest.FULL_TESTS).
    (schemathesis' lazy pytest loader does not run under pytest 9, so the operations are driven
    with hypothesis directly.)
    """
    prefixes, examples = SCHEMATHESIS_ROLES[role]
    examples = examples if FULL_TESTS else LOCAL_EXAMPLES
    user, ids, profile_id, open_assignment = schemathesis_world(role)
    headers = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    # Revoking the token would log the requests out for the rest of the run.
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application()).exclude(
        method="DELETE", path="/api/auth/token"
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    statuses: dict[str, set[int]] = {}
    for operation in operations:

        def real_objects(case, path=operation.path):
            for name in case.path_parameters or {}:
                case.path_parameters[name] = profile_id if name == "profile_id" else ids.get(path, 1)
            if open_assignment is not None and isinstance(case.body, dict) and "assignment_id" in case.body:
                case.body["assignment_id"] = open_assignment
            return case

        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)
            if mode == GenerationMode.POSITIVE:
                strategy = st.one_of(strategy, strategy.map(real_objects))
            seen = statuses.setdefault(operation.label, set())
            try:
                no_server_error_run(strategy, examples=examples, headers=headers, seen=seen)
            except hypothesis.errors.Unsatisfiable:
                # An operation without parameters or body has no invalid request to generate.
                assert mode == GenerationMode.NEGATIVE, operation.label
    allowed = [op.label for op in operations if op.path.startswith(prefixes)]
    assert len(allowed) >= 5, allowed
    refused = [label for label in allowed if not statuses.get(label, set()) - {401, 403}]
    assert not refused, f"{role}: operations only ever refused: {refused} ({statuses})"
