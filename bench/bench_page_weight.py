"""Page weight: the bytes a browser with an empty cache downloads to show each main page.

Not a test: it prints figures. It builds the demo in a temporary folder (SQLite, ``migrate`` and
``load_demo``), starts ``runserver`` on it (DEBUG, so static files are served uncompressed, as
on a laptop: production compresses CSS and JS, never images), and opens each page in headless
Chromium with Playwright, in a fresh browser context (empty cache) per page, at 1280x720 and at
390x844 (device scale 3, a phone). It waits until the network is idle (so images the page
prefetches for the next pair are counted too) and adds up the response bodies' sizes as
Chromium received them (``request.sizes()["responseBodySize"]``), and counts the requests.

Pages: the home page (anonymous), the first tutorial rating screen (annotator1, after consent),
its feedback screen, and the Django admin's pair list (admin).

    .venv/bin/python bench/bench_page_weight.py [--chromium /usr/bin/chromium]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers import free_port, wait_up  # bench/helpers.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
PASSWORD = "bench page weight pass phrase"  # noqa: S105 - a throwaway demo database
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORTS = {"1280x720": {"width": 1280, "height": 720}, "390x844": {"width": 390, "height": 844}}
PASSWORDS_SNIPPET = f"""
from django.contrib.auth import get_user_model
for name in ("annotator1", "admin"):
    user = get_user_model().objects.get(username=name)
    user.set_password({PASSWORD!r})
    user.save()
"""


def server_env(var_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "RATINGGAME_", "DATABASE_"))}
    env.update(
        {
            "RATINGGAME_VAR_DIR": var_dir,
            "DJANGO_DEBUG": "1",
            "DJANGO_LOG_LEVEL": "WARNING",
            "RATINGGAME_MIN_SECONDS_PER_RATING": "0.5",
        }
    )
    return env


def weigh(browser, url: str, viewport: dict, state: dict | None, scale: float) -> tuple[int, int]:
    """(bytes of response bodies, requests) of one page load in an empty cache."""
    context = browser.new_context(viewport=viewport, device_scale_factor=scale, storage_state=state)
    page = context.new_page()
    requests = []
    page.on("requestfinished", lambda request: requests.append(request))
    page.goto(url, wait_until="networkidle")
    total = sum(max(0, request.sizes()["responseBodySize"]) for request in requests)
    context.close()
    return total, len(requests)


def log_in(browser, base: str, username: str) -> dict:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    state = context.storage_state()
    context.close()
    return state


def pages(browser, base: str) -> list[tuple[str, str, dict | None]]:
    """(name, URL, logged-in state) of each page to weigh; rates one tutorial pair on the way."""
    rater = log_in(browser, base, "annotator1")
    context = browser.new_context(storage_state=rater)
    page = context.new_page()
    page.goto(f"{base}/play/")
    if "/play/consent/" in page.url:
        page.check("#id_agree")
        page.click("main button[type=submit]")
    page.goto(f"{base}/play/tutorial/")
    rating_screen = page.url
    page.check("#value-3", force=True)
    page.wait_for_function("!document.querySelector('#submit-rating').disabled", timeout=15_000)
    page.click("#submit-rating")
    page.wait_for_url("**/play/feedback/**")
    feedback = page.url
    context.close()
    admin = log_in(browser, base, "admin")
    return [
        ("home (anonymous)", f"{base}/", None),
        ("rating screen (tutorial pair 2)", rating_screen, rater),
        ("feedback (tutorial pair 1)", feedback, rater),
        ("admin pair list", f"{base}/admin/ratinggame/captionpair/", admin),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    var_dir = tempfile.mkdtemp(prefix="bench-page-weight-")
    env = server_env(var_dir)
    try:
        for command in (["migrate", "-v0"], ["load_demo"], ["shell", "-v0", "-c", PASSWORDS_SNIPPET]):
            subprocess.run([PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        port = free_port()
        server = subprocess.Popen(
            [PYTHON, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--nothreading"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_up(base, server, "runserver")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium, args=LAUNCH_ARGS)
                print(f"{'page':<34} {'viewport':>9} {'bytes':>11} {'KiB':>8} {'requests':>8}")
                for name, url, state in pages(browser, base):
                    for label, viewport in VIEWPORTS.items():
                        scale = 3 if label == "390x844" else 1
                        size, count = weigh(browser, url, viewport, state, scale)
                        print(f"{name:<34} {label:>9} {size:>11,} {size / 1024:>8.1f} {count:>8}", flush=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
