"""Every URL of the project, for anonymous, annotator, researcher and admin, against an explicit table.

The walk covers every pattern of the root URL conf, recursively (the site, the API, the staff
pages, the Django admin), with path converters filled from real objects. A URL pattern with no
row in the table fails the test, and so does a row whose pattern no longer exists: adding a URL
means deciding who may use it.

Cells: an HTTP status, LOGIN (302 to the site's log-in page), ADMIN_LOGIN (302 to the admin's),
or REDIRECT (302 elsewhere: the journey sends a rater to their own step). GET is tried on every
URL; the write methods (POST, DELETE) of the routes that take them are in a second table, sent
with an empty (or invalid) body so that an authorized request stops at validation and changes
nothing. The Django admin's add, change and delete pages of every model are written to as well;
the staff action log is read-only there (add, change and delete refused).
"""

import re

import pytest
from django.apps import apps
from django.contrib import admin as django_admin
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotators.models import (
    BonusBatch,
    CompetencyAnalysis,
    Dispute,
    ProbationRound,
    RaterAction,
    RaterProfile,
    RaterState,
)
from ratinggame import game
from ratinggame.models import Assignment, ImportJob, Pool, Rating
from scoring.models import Calibration, ExportJob, ModelRating, PredictorRun
from tests.factories import CaptionPairFactory, ProbationPairFactory, rating_make
from tests.ratinggame.api_helpers import admin, annotator, researcher

pytestmark = pytest.mark.django_db

LOGIN, ADMIN_LOGIN, REDIRECT = "login", "admin-login", "redirect"
ROLES = ("anonymous", "annotator", "researcher", "admin")

# Who may do what. Values per role: (anonymous, annotator, researcher, admin).
PUBLIC = (200, 200, 200, 200)
SIGNED_IN = (LOGIN, 200, 200, 200)
RESEARCH_PAGE = (LOGIN, 403, 200, 200)
STAFF_PAGE = (LOGIN, 403, 403, 200)
API_PUBLIC = (200, 200, 200, 200)
API_GAME = (401, 200, 403, 200)
API_GAME_WRITE_ONLY = (401, 405, 403, 405)  # GET on a POST-only game endpoint
API_RESEARCH = (401, 403, 200, 200)
API_RESEARCH_WRITE_ONLY = (401, 403, 405, 405)
API_ADMIN = (401, 403, 403, 200)
API_ADMIN_WRITE_ONLY = (401, 403, 403, 405)
DJANGO_ADMIN = (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200)

GET_TABLE = {
    # --- The site and the journey (the annotator is in the game; the researcher and the admin
    # never gave consent, so the journey sends them to the consent page).
    "": PUBLIC,
    "accounts/signup/": (200, REDIRECT, REDIRECT, REDIRECT),
    "play/": (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    "play/consent/": (LOGIN, REDIRECT, 200, 200),
    "play/introduction/": (LOGIN, 200, REDIRECT, REDIRECT),
    "play/suspended/": (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    "leaderboard/": PUBLIC,
    "me/": SIGNED_IN,
    "me/delete/": SIGNED_IN,
    "play/<stage:stage>/": (LOGIN, 200, REDIRECT, REDIRECT),
    # The assignment named is rated already: it gives way to the pair open now, at its own URL.
    "play/<stage:stage>/<int:assignment_id>/": (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    "play/submit/": (405, 405, 405, 405),
    "play/feedback/<int:assignment_id>/": (LOGIN, 200, REDIRECT, REDIRECT),
    "play/feedback/<int:assignment_id>/dispute/": (LOGIN, 405, 405, 405),
    "play/report/": (LOGIN, 405, 405, 405),
    "play/skip/": (LOGIN, 405, 405, 405),
    "play/finish/": (LOGIN, 405, 405, 405),  # POST only: a participant ends a session with nothing left
    # --- Accounts (Django's views; the log-in page is behind the log-in limiter).
    "accounts/login/": PUBLIC,
    "accounts/logout/": (405, 405, 405, 405),
    "accounts/password_change/": SIGNED_IN,
    "accounts/password_change/done/": SIGNED_IN,
    "accounts/password_reset/": PUBLIC,
    "accounts/password_reset/done/": PUBLIC,
    "accounts/reset/<uidb64>/<token>/": PUBLIC,
    "accounts/reset/done/": PUBLIC,
    # --- Research pages.
    "research/": RESEARCH_PAGE,
    # The pay report (this month by default).
    "research/pay/": RESEARCH_PAGE,
    # Prolific's part of it: a batch's page; drafting and approving are POSTs only.
    "research/pay/bonus/": (405, 405, 405, 405),
    "research/pay/bonus/<int:batch_id>/": RESEARCH_PAGE,
    "research/pay/approve/": (405, 405, 405, 405),
    # --- The study: an entry link without an id shows the study to anyone; the completion page
    # sends anyone whose session has not ended (here: nobody came through a link) to the journey.
    "study/enter/": PUBLIC,
    "study/complete/": (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    "staff/study/": (301, 301, 301, 301),  # moved to research/study/: old links follow
    "research/study/": RESEARCH_PAGE,
    "research/import/": RESEARCH_PAGE,
    "research/import/<int:import_id>/": RESEARCH_PAGE,
    "research/import/<int:import_id>/status/": RESEARCH_PAGE,
    "research/exports/": (405, 405, 405, 405),
    "research/exports/<int:job_id>/status/": RESEARCH_PAGE,
    "research/exports/<int:job_id>/download/": RESEARCH_PAGE,
    # --- Staff pages.
    "staff/": STAFF_PAGE,
    "staff/raters/<int:profile_id>/": STAFF_PAGE,
    "staff/raters/<int:profile_id>/suspend/": STAFF_PAGE,
    "staff/raters/<int:profile_id>/reinstate/": STAFF_PAGE,
    "staff/raters/<int:profile_id>/probation/": STAFF_PAGE,
    "staff/disputes/": STAFF_PAGE,
    "staff/disputes/<int:dispute_id>/resolve/": STAFF_PAGE,
    "staff/competency/refresh/": STAFF_PAGE,
    "staff/reports/": STAFF_PAGE,
    "staff/reports/<int:pair_id>/resolve/": STAFF_PAGE,
    # --- Operations.
    "healthz": PUBLIC,
    "media/<path:path>": PUBLIC,
    # --- The API.
    "api/schema/": API_PUBLIC,
    "api/docs/": API_PUBLIC,
    "api/redoc/": API_PUBLIC,
    "api/auth/signup": (405, 405, 405, 405),
    "api/auth/token": (401, 405, 405, 405),
    "api/game/step": API_GAME,
    "api/game/consent": API_GAME_WRITE_ONLY,
    "api/game/next": API_GAME_WRITE_ONLY,
    "api/game/submit": API_GAME_WRITE_ONLY,
    "api/game/skip": API_GAME_WRITE_ONLY,
    # The admin may play, but this assignment is the annotator's: not_yours.
    "api/game/feedback/<int:assignment_id>": (401, 200, 403, 403),
    "api/pairs/": API_RESEARCH,
    "api/pairs/import": API_RESEARCH_WRITE_ONLY,
    "api/pairs/<int:pk>/": API_RESEARCH,
    "api/imports/<int:pk>/": API_RESEARCH,
    "api/ratings/": API_RESEARCH,
    "api/ratings/<int:pk>/": API_RESEARCH,
    "api/exports/": API_RESEARCH,
    "api/exports/<int:pk>/": API_RESEARCH,
    "api/exports/<int:pk>/download": API_RESEARCH,
    "api/progress/": API_RESEARCH,
    "api/study/pay": (401, 403, 400, 400),  # no period given: 400 for those who may ask
    "api/study/session": API_GAME,
    "api/study/session/finish": API_GAME_WRITE_ONLY,
    "api/admin/raters/": API_ADMIN,
    "api/admin/raters/<int:profile_id>/": API_ADMIN,
    "api/admin/raters/<int:profile_id>/suspend": API_ADMIN_WRITE_ONLY,
    "api/admin/raters/<int:profile_id>/reinstate": API_ADMIN_WRITE_ONLY,
    "api/admin/raters/<int:profile_id>/probation": API_ADMIN_WRITE_ONLY,
    "api/admin/actions/": API_ADMIN,
    "api/^(?P<path>.*)$": (404, 404, 404, 404),
    # --- The Django admin: staff only (the admin role is staff; the others are sent to its log-in).
    "admin/login/": (200, 200, 200, REDIRECT),
    "admin/": DJANGO_ADMIN,
    "admin/logout/": (REDIRECT, REDIRECT, REDIRECT, 405),
    "admin/password_change/": DJANGO_ADMIN,
    "admin/password_change/done/": DJANGO_ADMIN,
    "admin/autocomplete/": (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403),
    "admin/jsi18n/": DJANGO_ADMIN,
    # CaptionPair has no page on the site: nothing to view.
    "admin/r/<path:content_type_id>/<path:object_id>/": (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 404),
    "admin/auth/user/<id>/password/": DJANGO_ADMIN,
    "admin/^(?P<app_label>annotators|auth|authtoken|ratinggame|scoring)/$": DJANGO_ADMIN,
    "admin/(?P<url>.*)$": (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 404),
}
# Every registered model's admin pages (changelist, add, change, delete, history; the bare
# object URL redirects to its change page). The model part of the route is matched, so a new
# model admin needs no row, but a new kind of admin page does.
ADMIN_MODEL_ROUTES = {
    "": DJANGO_ADMIN,
    "add/": DJANGO_ADMIN,
    "<path:object_id>/change/": DJANGO_ADMIN,
    "<path:object_id>/delete/": DJANGO_ADMIN,
    "<path:object_id>/history/": DJANGO_ADMIN,
    "<path:object_id>/": (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, REDIRECT),
}

# The audit log of staff actions, and the rows only services write (ratings and assignments,
# which the pairs' aggregates count; disputes, which staff resolve on the dashboard), can be
# read in the admin, never added, changed or deleted by hand; every other model admin is editable.
ADMIN_REFUSED = (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 403)
_READ_ONLY = {
    "add/": ADMIN_REFUSED,
    "<path:object_id>/change/": ADMIN_REFUSED,
    "<path:object_id>/delete/": ADMIN_REFUSED,
}
READ_ONLY_ADMIN = {
    RaterAction: _READ_ONLY,
    Rating: _READ_ONLY,
    Assignment: _READ_ONLY,
    Dispute: _READ_ONLY,
    ImportJob: _READ_ONLY,
    # What players are scored against (the primes follow the model ratings) and the probation
    # rounds' scores and orders: only the services write them (issue 21).
    ModelRating: _READ_ONLY,
    ProbationRound: _READ_ONLY,
}
# Change forms with nothing required left to fill (the rest is read-only or optional) save an
# empty POST and go back to the list: an Image's source, a profile's leaderboard settings.
ADMIN_SAVED = (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, REDIRECT)
ADMIN_SAVES_EMPTY_CHANGE = {"Image", "RaterProfile"}
# GET of a read-only model's change page shows it without a form (the "view" page).
READ_ONLY_ADMIN_GET = {"add/": ADMIN_REFUSED, "<path:object_id>/delete/": ADMIN_REFUSED}
# POSTs to every model admin's pages, empty: the changelist (actions), add, change and delete.
ADMIN_MODEL_WRITE_ROUTES = {
    "": DJANGO_ADMIN,
    "add/": DJANGO_ADMIN,
    "<path:object_id>/change/": DJANGO_ADMIN,
    "<path:object_id>/delete/": DJANGO_ADMIN,
}

# Write methods, sent with an empty body: an authorized request stops at validation (400) or at
# a page that shows the form again; an unauthorized one never gets that far.
WRITE_TABLE = {
    ("POST", "accounts/signup/"): (400, REDIRECT, REDIRECT, REDIRECT),
    ("POST", "accounts/login/"): (200, 200, 200, 200),
    ("POST", "accounts/password_change/"): (LOGIN, 200, 200, 200),
    ("POST", "accounts/password_reset/"): (200, 200, 200, 200),
    ("POST", "accounts/reset/<uidb64>/<token>/"): (200, 200, 200, 200),
    ("POST", "me/"): (LOGIN, 400, 400, 400),
    # Without the confirmation box: back to the page, nothing deleted.
    ("POST", "me/delete/"): (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    ("POST", "play/consent/"): (LOGIN, REDIRECT, 400, 400),
    # The rating screens answer every POST with a redirect (post/redirect/get), refusals too.
    ("POST", "play/<stage:stage>/"): (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    # The rating page's script: JSON, and a form that names no pair is refused (400).
    ("POST", "play/submit/"): (401, 400, 400, 400),
    ("POST", "play/feedback/<int:assignment_id>/dispute/"): (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    ("POST", "play/report/"): (LOGIN, REDIRECT, REDIRECT, REDIRECT),
    ("POST", "research/exports/"): (LOGIN, 403, 400, 400),
    # Without a day, an action, or Prolific's settings: back to the page with the message, nothing sent.
    ("POST", "research/pay/bonus/"): (LOGIN, 403, REDIRECT, REDIRECT),
    ("POST", "research/pay/bonus/<int:batch_id>/"): (LOGIN, 403, REDIRECT, REDIRECT),
    ("POST", "research/pay/approve/"): (LOGIN, 403, REDIRECT, REDIRECT),
    # Without a manifest: back to the import page with the message (post/redirect/get).
    ("POST", "research/import/"): (LOGIN, 403, REDIRECT, REDIRECT),
    ("POST", "staff/raters/<int:profile_id>/suspend/"): (LOGIN, 403, 403, 400),
    ("POST", "staff/raters/<int:profile_id>/reinstate/"): (LOGIN, 403, 403, 400),
    ("POST", "staff/raters/<int:profile_id>/probation/"): (LOGIN, 403, 403, 400),
    ("POST", "staff/disputes/<int:dispute_id>/resolve/"): (LOGIN, 403, 403, 400),
    ("POST", "staff/reports/<int:pair_id>/resolve/"): (LOGIN, 403, 403, 400),
    # An analysis is already pending in the world: the admin is sent back to the dashboard.
    ("POST", "staff/competency/refresh/"): (LOGIN, 403, 403, REDIRECT),
    ("POST", "api/auth/signup"): (400, 400, 400, 400),
    ("POST", "api/auth/token"): (400, 400, 400, 400),
    ("DELETE", "api/auth/token"): (401, 204, 204, 204),
    ("POST", "api/game/consent"): (401, 400, 403, 400),
    # Serving a pair is a write (an assignment); the admin in the world never gave consent.
    ("POST", "api/game/next"): (401, 200, 403, 403),
    ("POST", "api/game/submit"): (401, 400, 403, 400),
    ("POST", "api/pairs/import"): (401, 403, 400, 400),
    ("POST", "api/exports/"): (401, 403, 400, 400),
    ("POST", "api/admin/raters/<int:profile_id>/suspend"): (401, 403, 403, 400),
    ("POST", "api/admin/raters/<int:profile_id>/reinstate"): (401, 403, 403, 400),
    ("POST", "api/admin/raters/<int:profile_id>/probation"): (401, 403, 403, 400),
    ("POST", "admin/login/"): (200, 200, 200, 200),
    ("POST", "admin/password_change/"): (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200),
    ("POST", "admin/auth/user/<id>/password/"): (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, 200),
    # Last: they end the session (each request has a client of its own anyway).
    ("POST", "accounts/logout/"): (REDIRECT, REDIRECT, REDIRECT, REDIRECT),
    ("POST", "admin/logout/"): (REDIRECT, REDIRECT, REDIRECT, REDIRECT),
}

# Bodies other than empty (as JSON unless a content type is given): the export form's defaults
# are all valid, and so is an empty profile form, so they get invalid ones.
WRITE_BODIES = {
    ("POST", "api/exports/"): b'{"min_ratings": 0}',
    ("POST", "me/"): ("display_name=" + "x" * 41, "application/x-www-form-urlencoded"),
}

# URLs for the regular-expression patterns (which have no converters to fill).
REGEX_URLS = {
    "api/^(?P<path>.*)$": "/api/no/such/endpoint",
    "admin/^(?P<app_label>annotators|auth|authtoken|ratinggame|scoring)/$": "/admin/ratinggame/",
    "admin/(?P<url>.*)$": "/admin/no-such-page/",
}


def walk(patterns, prefix: str = ""):
    """(route, pattern, admin model or None) for every URL pattern, depth first."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield _app_labels_sorted(prefix + str(entry.pattern)), entry


APP_LABELS = re.compile(r"\(\?P<app_label>([a-z_|]+)\)")


def _app_labels_sorted(route: str) -> str:
    """The admin's app index lists its apps in the order their admin modules registered a model,
    which follows the import order of those modules, not anything a user sees: sorted here."""
    return APP_LABELS.sub(lambda m: "(?P<app_label>" + "|".join(sorted(m[1].split("|"))) + ")", route)


ADMIN_MODEL = re.compile(r"^admin/(?P<app>[a-z_]+)/(?P<model>[a-z_]+)/(?P<rest>.*)$")


def admin_model_of(route: str):
    match = ADMIN_MODEL.match(route)
    if not match or match["rest"] not in ADMIN_MODEL_ROUTES:
        return None, None
    try:
        model = apps.get_model(match["app"], match["model"])
    except LookupError:
        return None, None
    return (model, match["rest"]) if model in django_admin.site._registry else (None, None)


@pytest.fixture
def world(settings):
    """One of everything a URL can point at, owned by the annotator where it matters."""
    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    people = {"annotator": annotator(state=RaterState.GAME), "researcher": researcher(), "admin": admin()}
    rater = people["annotator"]
    pairs = [CaptionPairFactory(pool=Pool.GAME) for _ in range(3)]
    served = game.pair_serve(rater=rater)
    feedback = game.rating_submit(rater=rater, assignment_id=served.assignment_id, value=3)
    other = annotator(state=RaterState.GAME)
    rating = rating_make(rater=other, pair=pairs[1], value=4, stage="game")
    profile = RaterProfile.objects.get(user=rater)
    ProbationRound.objects.create(profile=profile, number=1, pair_order=[ProbationPairFactory().pk])
    dispute = Dispute.objects.create(rating_id=feedback.rating_id, comment="too harsh")
    RaterAction.objects.create(rater=profile, actor=people["admin"], action="note", reason="seen")
    CompetencyAnalysis.objects.create()
    calibration = Calibration.objects.create(model_identity="m", method="default", x_knots=[0, 1], y_knots=[1, 5])
    ModelRating.objects.create(
        pair=pairs[0], slot=1, model_identity="m", metric="clip_s", raw_score=0.3, value=3.2, calibration=calibration
    )
    PredictorRun.objects.create()
    job = ExportJob.objects.create(
        created_by=people["researcher"],
        status=ExportJob.Status.DONE,
        archive="exports/1.zip",
        finished_at=timezone.now(),
    )
    archive = settings.MEDIA_ROOT / "exports" / f"{job.pk}.zip"
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip
    ExportJob.objects.filter(pk=job.pk).update(archive=f"exports/{job.pk}.zip")
    Token.objects.create(user=other)
    import_job = ImportJob.objects.create(created_by=people["researcher"], status=ImportJob.Status.DONE)
    batch = BonusBatch.objects.create(
        study_id="study-1", up_to=timezone.now().date(), currency="GBP", total=0, created_at=timezone.now()
    )
    return {
        "people": people,
        "values": {
            "stage": "game",
            "assignment_id": served.assignment_id,
            "job_id": job.pk,
            "import_id": import_job.pk,
            "batch_id": batch.pk,
            "profile_id": profile.pk,
            "dispute_id": dispute.pk,
            "pair_id": pairs[0].pk,
            "uidb64": "MQ",
            "token": "set-password",
            "id": rater.pk,
            "content_type_id": ContentType.objects.get_for_model(pairs[0]).pk,
        },
        "pk": {
            "api/pairs/": pairs[0].pk,
            "api/ratings/": rating.pk,
            "api/exports/": job.pk,
            "api/imports/": import_job.pk,
        },
        "media": pairs[0].image.file.name,
    }


CONVERTER = re.compile(r"<(?:(?P<kind>\w+):)?(?P<name>\w+)>")


def url_for(route: str, world: dict) -> str:
    if route in REGEX_URLS:
        return REGEX_URLS[route]
    model, _ = admin_model_of(route)

    def value(match: re.Match) -> str:
        name = match["name"]
        if name == "object_id" and model is not None:
            instance = model._default_manager.order_by("pk").first()
            assert instance is not None, f"the world has no {model.__name__}: add one for {route}"
            return str(instance.pk)
        if name == "object_id":  # admin:view_on_site
            return str(next(iter(world["pk"].values())))
        if name == "pk":
            prefix = next(p for p in world["pk"] if route.startswith(p))
            return str(world["pk"][prefix])
        if name == "path":
            return world["media"]
        return str(world["values"][name])

    return "/" + CONVERTER.sub(value, route)


def expected_for(route: str) -> tuple:
    if route in GET_TABLE:
        return GET_TABLE[route]
    model, rest = admin_model_of(route)
    if model is not None:
        if model in READ_ONLY_ADMIN and rest in READ_ONLY_ADMIN_GET:
            return READ_ONLY_ADMIN_GET[rest]
        return ADMIN_MODEL_ROUTES[rest]
    raise KeyError(route)


def write_requests() -> list[tuple[str, str, tuple]]:
    """(method, route, expected row) of every write: WRITE_TABLE, then each model admin's pages."""
    requests = [(method, route, row) for (method, route), row in WRITE_TABLE.items()]
    for route in all_routes():
        model, rest = admin_model_of(route)
        if model is not None and rest in ADMIN_MODEL_WRITE_ROUTES:
            row = READ_ONLY_ADMIN.get(model, {}).get(rest, ADMIN_MODEL_WRITE_ROUTES[rest])
            if rest == "<path:object_id>/change/" and model.__name__ in ADMIN_SAVES_EMPTY_CHANGE:
                row = ADMIN_SAVED
            requests.append(("POST", route, row))
    return requests


def row_counts() -> dict[str, int]:
    return {model._meta.label: model._default_manager.count() for model in apps.get_models()}


def outcome(response) -> object:
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith("/admin/login/"):
            return ADMIN_LOGIN
        if location.startswith("/accounts/login/"):
            return LOGIN
        return REDIRECT
    return response.status_code


def client_for(role: str, world: dict) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world["people"][role])
    return client


def all_routes() -> list[str]:
    return list(dict.fromkeys(route for route, _ in walk(get_resolver().url_patterns)))


def test_every_url_pattern_has_a_row_and_every_row_a_pattern():
    routes = all_routes()
    missing = [route for route in routes if route not in GET_TABLE and admin_model_of(route)[0] is None]
    assert not missing, f"URL patterns without a row in GET_TABLE: {missing}"
    stale = [route for route in GET_TABLE if route not in routes]
    assert not stale, f"rows for URL patterns that no longer exist: {stale}"
    stale_writes = [key for key in WRITE_TABLE if key[1] not in routes]
    assert not stale_writes, stale_writes


@pytest.mark.parametrize("role", ROLES)
def test_every_url_answers_each_role_as_the_table_says(role, world):
    client = client_for(role, world)
    wrong = []
    for route in all_routes():
        url = url_for(route, world)
        expected = expected_for(route)[ROLES.index(role)]
        got = outcome(client.get(url))
        if got != expected:
            wrong.append(f"GET {url} ({route}): expected {expected}, got {got}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("role", ROLES)
def test_every_write_route_answers_each_role_as_the_table_says(role, world):
    before = row_counts()
    wrong = []
    for method, route, expected_row in write_requests():
        client = client_for(role, world)  # a fresh session: the log-out routes end theirs
        url = url_for(route, world)
        body = WRITE_BODIES.get((method, route), b"")
        body, content_type = body if isinstance(body, tuple) else (body, "application/json")
        response = client.generic(method, url, body, content_type=content_type)
        got, expected = outcome(response), expected_row[ROLES.index(role)]
        if got != expected:
            wrong.append(f"{method} {url}: expected {expected}, got {got}")
    assert not wrong, "\n".join(wrong)
    # Nothing above was allowed to change anything: no staff action, no export, no new account,
    # no row deleted anywhere, and none added but the assignment an annotator is served by
    # api/game/next, the sessions of the log-ins, the admin's log of the saves above, and the
    # rater profile me/ gives a signed-in user without one (as its GET does).
    assert RaterAction.objects.filter(action__in=["suspend", "reinstate", "send_to_probation"]).count() == 0
    assert ExportJob.objects.count() == 1
    after = row_counts()
    for label in ("ratinggame.Assignment", "ratinggame.Session", "admin.LogEntry", "annotators.RaterProfile"):
        assert after.pop(label, 0) >= before.pop(label, 0), label
    assert after == before


# --- Roles held together (issue 15, part 5) ---------------------------------------------------------


def test_the_admin_role_alone_opens_what_researchers_open(world):
    """Admins see research: a user with the admin role, neither staff nor researcher, gets every
    research page and endpoint the researcher gets."""
    from annotators.roles import ADMIN
    from tests.ratinggame.api_helpers import role_user

    admin_only = role_user(ADMIN)
    admin_only.is_staff = False
    admin_only.save()
    client = Client()
    client.force_login(admin_only)
    research_rows = {RESEARCH_PAGE, API_RESEARCH}
    routes = [route for route in all_routes() if GET_TABLE.get(route) in research_rows]
    assert "research/" in routes and "api/pairs/" in routes
    wrong = []
    for route in routes:
        url = url_for(route, world)
        expected = GET_TABLE[route][ROLES.index("researcher")]
        if (got := outcome(client.get(url))) != expected:
            wrong.append(f"GET {url}: expected {expected}, got {got}")
    assert not wrong, "\n".join(wrong)


def test_a_rater_who_is_also_a_researcher_sees_nothing_of_the_pair_being_rated(settings):
    """SPEC 5: neither the consensus nor the primes nor other ratings of a pair one holds an open
    assignment for, whatever roles one also holds; all of it once the rating is in."""
    from annotators.roles import RESEARCHER, ensure_roles
    from ratinggame.models import CaptionPair
    from tests.ratinggame.api_helpers import token_client
    from tests.ratinggame.journey_helpers import seed_ratings

    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    cache.clear()
    pair = CaptionPairFactory(pool=Pool.GAME, primes=[2.0, 4.0])
    seed_ratings(pair, [3, 5])
    other = CaptionPairFactory(pool=Pool.GAME)
    both = annotator(state=RaterState.GAME)
    both.groups.add(ensure_roles()[RESEARCHER])
    api = token_client(both)
    served = api.post("/api/game/next", format="json").json()
    assert Assignment.objects.get(pk=served["assignment_id"]).pair_id == pair.pk
    rating_of_pair = pair.ratings.first().pk
    job = ExportJob.objects.create(created_by=both, status=ExportJob.Status.DONE, finished_at=timezone.now())

    assert api.get(f"/api/pairs/{pair.pk}/").status_code == 404
    assert pair.pk not in [p["id"] for p in api.get("/api/pairs/").json()["results"]]
    assert other.pk in [p["id"] for p in api.get("/api/pairs/").json()["results"]]
    assert api.get("/api/ratings/", {"pair": pair.pk}).json()["count"] == 0
    assert api.get(f"/api/ratings/{rating_of_pair}/").status_code == 404
    refused = api.get(f"/api/exports/{job.pk}/download")
    assert refused.status_code == 409 and "rating a game pair" in refused.json()["error"]["message"]

    api.post("/api/game/submit", {"assignment_id": served["assignment_id"], "value": 4}, format="json")
    shown = api.get(f"/api/pairs/{pair.pk}/").json()
    assert shown["primes"] == [2.0, 4.0] and shown["human_count"] == 3
    assert api.get("/api/ratings/", {"pair": pair.pk}).json()["count"] == 3
    assert CaptionPair.objects.get(pk=pair.pk).human_count == 3


def test_a_staff_member_rating_a_pair_does_not_find_it_in_the_django_admin(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    pair = CaptionPairFactory(pool=Pool.GAME, caption="the pair being rated")
    staff = admin()
    RaterProfile.objects.create(
        user=staff, state=RaterState.GAME, consent_at=timezone.now(), game_entered_at=timezone.now()
    )
    served = game.pair_serve(rater=staff)
    assert served.pair_id == pair.pk
    client = Client()
    client.force_login(staff)
    assert "the pair being rated" not in client.get("/admin/ratinggame/captionpair/").content.decode()
    assert client.get(f"/admin/ratinggame/captionpair/{pair.pk}/change/").status_code == 302  # "does not exist"
    game.rating_submit(rater=staff, assignment_id=served.assignment_id, value=3)
    assert "the pair being rated" in client.get("/admin/ratinggame/captionpair/").content.decode()
