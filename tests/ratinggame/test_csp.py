"""The Content-Security-Policy (issue 15, part 6): every response carries one, and the pages, the
Django admin and the API documentation work under it in real Chromium, without one violation."""

import json

import pytest
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CSPMiddleware
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from annotators.roles import ANNOTATOR, ensure_roles
from ratinggame.csp_policy import SitePolicyMiddleware
from ratinggame.models import Pool
from tests.factories import CaptionPairFactory, TutorialPairFactory, UserFactory

# Redoc shows its maker's logo from the maker's CDN: the policy blocks it on purpose (the site
# loads nothing from third parties) and Redoc drops the image when it does not load.
INTENDED = "img-src blocked https://cdn.redoc.ly/"
# Collected in the page before any of its own scripts runs.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (event) => {
  const where = `${event.sourceFile}:${event.lineNumber}`;
  window.__csp.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${where}`);
});
"""


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/api/game/step", "/admin/login/", "/api/docs/", "/healthz"])
def test_every_response_carries_the_policy(client, path):
    policy = client.get(path)["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "object-src 'none'" in policy and "frame-ancestors 'none'" in policy


def _headers(middleware_class, request_path: str, response: HttpResponse, *, nonce: bool = False) -> dict:
    request = RequestFactory().get(request_path)
    middleware = middleware_class(lambda _request: response)
    middleware.process_request(request)
    if nonce:
        str(request.csp_nonce)  # a page that uses the nonce in a script tag
    answered = middleware.process_response(request, response)
    return {name: answered[name] for name in (HEADER, HEADER_REPORT_ONLY) if name in answered}


def _responses():
    """Responses of every kind the policy's rule tells apart (each made anew: the rule marks them)."""
    yield "plain", "/play/game/", HttpResponse("page"), False
    yield "nonce", "/play/game/", HttpResponse("page"), True
    exempt = HttpResponse("exempt")
    exempt._csp_exempt = True
    yield "exempt", "/", exempt, False
    not_false = HttpResponse("exempt by another value")
    not_false._csp_exempt = None  # django-csp exempts whatever is not False itself
    yield "exempt by None", "/", not_false, False
    already = HttpResponse("set by the view")
    already[HEADER] = "default-src 'none'"
    yield "already set", "/", already, False
    updated = HttpResponse("redoc")
    updated._csp_update = {"style-src": ["'unsafe-inline'"]}
    yield "a view's own policy", "/api/redoc/", updated, False
    yield "not found", "/nowhere/", HttpResponse("gone", status=404), False
    yield "excluded", "/excluded/page", HttpResponse("page"), False


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("report_only", [False, True])
def test_the_site_policy_built_once_gives_every_response_what_django_csp_gives_it(settings, debug, report_only):
    settings.DEBUG = debug
    policy = {**settings.CONTENT_SECURITY_POLICY, "EXCLUDE_URL_PREFIXES": ["/excluded/"]}
    settings.CONTENT_SECURITY_POLICY = policy
    if report_only:
        settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'self'"], "report-uri": "/r"}}
    seen = set()
    for (name, path, ours, nonce), (_, _, theirs, _) in zip(_responses(), _responses(), strict=True):
        expected = _headers(CSPMiddleware, path, theirs, nonce=nonce)
        assert _headers(SitePolicyMiddleware, path, ours, nonce=nonce) == expected, name
        seen.add(tuple(sorted(expected)))
    # The cases differ: some get both headers (or the policy alone), some get none.
    assert len(seen) >= 2


def test_a_change_of_the_policy_setting_is_the_policy_from_then_on(settings):
    before = _headers(SitePolicyMiddleware, "/", HttpResponse("page"))[HEADER]
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    assert before != "default-src 'none'"
    assert _headers(SitePolicyMiddleware, "/", HttpResponse("page"))[HEADER] == "default-src 'none'"


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_pages_admin_and_api_documentation_run_without_a_violation(live_server, browser):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    TutorialPairFactory(display_order=0)
    pair = CaptionPairFactory(pool=Pool.GAME)
    boss = UserFactory(username="boss", is_staff=True, is_superuser=True)
    boss.groups.add(ensure_roles()[ANNOTATOR])
    RaterProfile.objects.create(user=boss, state=RaterState.TUTORIAL, consent_at=timezone.now())
    anonymous = ["/", "/accounts/login/", "/accounts/signup/", "/accounts/password_reset/", "/admin/login/"]
    signed_in = [
        "/play/tutorial/",
        "/leaderboard/",
        "/me/",
        "/research/",
        "/staff/",
        "/admin/",
        "/admin/ratinggame/captionpair/",
        f"/admin/ratinggame/captionpair/{pair.pk}/change/",
        "/admin/ratinggame/image/add/",
        f"/admin/auth/user/{boss.pk}/change/",
        "/api/docs/",
        "/api/redoc/",
    ]
    violations = {}
    for paths, session in ((anonymous, None), (signed_in, session_of(boss))):
        context = browser.new_context()
        if session:
            context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
        context.add_init_script(RECORD_VIOLATIONS)
        page = context.new_page()
        page.set_default_timeout(20_000)
        for path in paths:
            response = page.goto(live_server.url + path, wait_until="networkidle")
            assert response.status == 200, (path, response.status)
            rendered = True
            if path.startswith("/api/"):  # the documentation shows the schema's operations
                try:
                    page.get_by_text("/api/game/submit").first.wait_for(timeout=20_000)
                except PlaywrightTimeout:
                    rendered = False
            found = [v for v in page.evaluate("window.__csp") if not v.startswith(INTENDED)]
            found += [] if rendered else ["the page did not render"]
            if found:
                violations[path] = found
        context.close()
    assert not violations, json.dumps(violations, indent=1)
