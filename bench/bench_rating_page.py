"""The rating page as a rater feels it: Submit to feedback on screen, Next to the next image painted.

Not a test: it prints figures. It builds a PostgreSQL database (``[--db-prefix]bench_rating_page``,
dropped after) with the demo's pictures and 300 more game pairs on them (``load_demo`` without
accounts, production settings), starts gunicorn (4 sync workers, production settings, the
3-second floor lowered to ``--floor`` seconds so a run takes minutes), and drives headless
Chromium at 1280x720 through ``--ratings`` game ratings in two ways, each by a rater of its own:

- ``in place``: the page's script as shipped (``POST /play/submit/``: the feedback and the next
  pair in one request, shown in place);
- ``pages``: the same page with ``fetch`` taken away before its script runs, so the form posts as
  it does without a script (POST, redirect, the feedback page, then the next rating page): how
  every rating went before issue 22.

The times are the browser's own (``performance.timeOrigin + performance.now()``, kept in
``sessionStorage`` across page loads): from the key press (Enter on the rating, N on the
feedback) to the second animation frame after the feedback is in the page, or after the next
image's ``load`` (what was painted). p50 and p95 per way, with the load average.

    .venv/bin/python bench/bench_rating_page.py [--ratings 50] [--floor 0.5] [--pg postgres://postgres@127.0.0.1:5432]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_journey import SERVER_ENV  # the same production settings as the rating path bench
from helpers import database_create, database_drop, free_port, session_of, wait_up

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
EXTRA_PAIRS = 300

# Marks in the page (an init script: Chromium adds it through its debugging protocol, outside the
# site's Content-Security-Policy): the key press, the feedback shown, the rating image painted.
MARKS = """
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const store = (name) => sessionStorage.setItem(name, String(now()));
  const painted = (name) => requestAnimationFrame(() => requestAnimationFrame(() => store(name)));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === "n") sessionStorage.setItem("pressed", String(now()));
  }, true);
  document.addEventListener("DOMContentLoaded", () => {
    const panel = document.getElementById("feedback-panel");
    if (panel) {
      const shown = new MutationObserver(() => { if (!panel.hidden) painted("feedback"); });
      shown.observe(panel, {attributes: true, attributeFilter: ["hidden"]});
    } else if (document.getElementById("continue")) {
      painted("feedback");  // the feedback page
    }
    const image = document.getElementById("pair-image");
    if (image) {
      image.addEventListener("load", () => painted("image"));
      if (image.complete && image.naturalWidth > 0) painted("image");
    }
  });
})();
"""
NO_FETCH = "window.fetch = undefined;"  # the page's script then leaves the form to post as a page


def build(db_url: str, media: str, out: str) -> None:
    """Migrate, load the demo's content, add game pairs and two game raters; write their sessions."""
    database_create(db_url)
    os.environ.update(server_env(db_url, media, 0.5))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from annotators.models import RaterProfile, RaterState
    from annotators.roles import ANNOTATOR, ensure_roles
    from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus

    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    call_command("load_demo", verbosity=0)
    images = list(Image.objects.all())
    CaptionPair.objects.bulk_create(
        CaptionPair(
            image=images[index % len(images)],
            caption=f"Bench caption number {index}",
            pool=Pool.GAME,
            primes=[3.0, 3.0],
            priming_status=PrimingStatus.DONE,
        )
        for index in range(EXTRA_PAIRS)
    )
    now = timezone.now()
    sessions = []
    for name in ("bench_in_place", "bench_pages"):
        user = get_user_model().objects.create_user(username=name, password=None)
        user.groups.add(ensure_roles()[ANNOTATOR])
        RaterProfile.objects.create(
            user=user, state=RaterState.GAME, consent_at=now, game_entered_at=now, window_count=20, window_points=40
        )
        sessions.append(session_of(user))
    Path(out).write_text("\n".join(sessions))


def server_env(db_url: str, media: str, floor: float) -> dict:
    """bench_journey's production settings, with this bench's media, static files and floor."""
    return {
        **SERVER_ENV,
        "DATABASE_URL": db_url,
        "MEDIA_ROOT": media,
        "STATIC_ROOT": str(Path(media).parent / "static"),
        "RATINGGAME_MIN_SECONDS_PER_RATING": str(floor),
        "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _mark(page, name: str, timeout: float = 20.0) -> float:
    from playwright.sync_api import Error as PlaywrightError

    deadline = time.monotonic() + timeout
    while True:
        try:
            value = page.evaluate(f"sessionStorage.getItem('{name}')")
        except PlaywrightError:  # the page is being replaced (a navigation): ask again
            value = None
        if value:
            return float(value)
        if time.monotonic() > deadline:
            raise SystemExit(f"no '{name}' mark in {timeout:g} s at {page.url}")
        time.sleep(0.01)


def drive(browser, url: str, session: str, ratings: int, in_place: bool) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_cookies([{"name": "sessionid", "value": session, "url": url}])
    page = context.new_page()
    page.add_init_script(MARKS)
    if not in_place:
        page.add_init_script(NO_FETCH)
    page.goto(f"{url}/play/game/")
    _mark(page, "image")
    feedback_ms, image_ms = [], []
    for _ in range(ratings):
        page.evaluate("['feedback', 'image', 'pressed'].forEach(name => sessionStorage.removeItem(name))")
        page.keyboard.press("3")
        page.wait_for_selector("#submit-rating:enabled")
        page.keyboard.press("Enter")
        feedback_ms.append(_mark(page, "feedback") - _mark(page, "pressed"))
        page.evaluate("['image', 'pressed'].forEach(name => sessionStorage.removeItem(name))")
        page.wait_for_selector("#continue")
        page.keyboard.press("n")
        image_ms.append(_mark(page, "image") - _mark(page, "pressed"))
        page.wait_for_selector("#rating-form")
    context.close()
    return {"feedback": feedback_ms, "image": image_ms}


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL (no db)")
    parser.add_argument("--db-prefix", default="")
    parser.add_argument("--ratings", type=int, default=50)
    parser.add_argument("--floor", type=float, default=0.5, help="seconds per rating (the site's floor is 3)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--build", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        build(*args.build)
        return

    from playwright.sync_api import sync_playwright

    db_url = f"{args.pg}/{args.db_prefix}bench_rating_page"
    folder = Path(tempfile.mkdtemp(prefix="bench-rating-page-"))
    media, out = folder / "media", folder / "sessions.txt"
    subprocess.run([PYTHON, __file__, "--build", db_url, str(media), str(out)], check=True)
    in_place_session, pages_session = out.read_text().split()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, **server_env(db_url, str(media), args.floor)}
    command = [GUNICORN, "ratinggame.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "4"]
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=(folder / "server.log").open("w"), stderr=subprocess.STDOUT
    )
    try:
        wait_up(url, server, "gunicorn")
        print(f"gunicorn 4 sync workers, PostgreSQL, Chromium 1280x720, {args.ratings} game ratings per way; {load()}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=LAUNCH_ARGS)
            results = {}
            for name, session, in_place in (("in place", in_place_session, True), ("pages", pages_session, False)):
                before = load()
                results[name] = drive(browser, url, session, args.ratings, in_place)
                for what, label in (("feedback", "Submit to feedback shown"), ("image", "Next to the image painted")):
                    values = results[name][what]
                    print(
                        f"  {name}: {label}: p50 {statistics.median(values):.0f} ms, "
                        f"p95 {percentile(values, 95):.0f} ms ({len(values)} ratings; {before} before, {load()} after)",
                        flush=True,
                    )
            browser.close()
        for what in ("feedback", "image"):
            ratio = statistics.median(results["in place"][what]) / statistics.median(results["pages"][what])
            print(f"in place / pages, {what} p50: {ratio:.2f}")
    finally:
        server.terminate()
        server.wait(timeout=30)
        database_drop(db_url)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
