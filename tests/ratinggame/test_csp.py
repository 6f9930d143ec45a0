"""The Content-Security-Policy (issue 15, part 6): every response carries one, and the pages, the
Django admin and the API documentation work under it in real Chromium, without one violation."""

import json

import pytest
from django.test import Client
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from annotators.roles import ANNOTATOR, ensure_roles
from ratinggame.models import Pool
from tests.factories import CaptionPairFactory, TutorialPairFactory, UserFactory

# Redoc shows its maker's logo from the maker's CDN: the policy blocks it on purpose (the site
# loads nothing from third parties) and Redoc drops the image when it does not load.
INTENDED = "img-src blocked https://cdn.redoc.ly/"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
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


def session_of(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_pages_admin_and_api_documentation_run_without_a_violation(live_server, chromium_path, monkeypatch):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
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
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=LAUNCH_ARGS)
        try:
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
        finally:
            browser.close()
    assert not violations, json.dumps(violations, indent=1)
