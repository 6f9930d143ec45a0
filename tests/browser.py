"""Shared by the browser tests (real Chromium through Playwright): launch options, the two
screen sizes the pages must fit, picture-like images, and a signed-in browser context."""

import hashlib
import io
import time
from pathlib import Path

from django.core.files.base import ContentFile
from django.test import Client
from PIL import Image as PILImage
from PIL import ImageDraw
from playwright.sync_api import Error as PlaywrightError

from tests.factories import ImageFactory

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# A laptop (1280x800 less the browser's own bars) and a phone, with touch.
LAPTOP = {"viewport": {"width": 1280, "height": 720}}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
SIZES = {"1280x720": LAPTOP, "390x844": PHONE}


def photo_like_image(seed: int, size: tuple[int, int] = (640, 427)):
    """A picture (sky, ground, a sun and a box) so that screenshots show a real layout."""
    width, height = size
    picture = PILImage.new("RGB", size, (120 + seed * 9 % 100, 170, 230))
    draw = ImageDraw.Draw(picture)
    draw.rectangle((0, height * 2 // 3, width, height), fill=(70, 130 + seed * 7 % 60, 60))
    draw.ellipse((width - 170, 40, width - 80, 130), fill=(250, 210, 80))
    draw.rectangle(
        (120 + seed * 20, height // 2, 260 + seed * 20, height * 3 // 4), fill=(160, 60 + seed * 15 % 120, 50)
    )
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    data = buffer.getvalue()
    return ImageFactory(
        file=ContentFile(data, name=f"photo{seed}.png"),
        sha256=hashlib.sha256(data).hexdigest(),
        width=width,
        height=height,
    )


def launch(browser_type, chromium_path: str, *, back_forward_cache: bool = False):
    """Chromium as the tests drive it. Playwright turns the back-forward cache off by default;
    ``back_forward_cache=True`` leaves it on, as in a rater's browser, where Back may bring a page
    back from memory as it was left."""
    ignored = ["--disable-back-forward-cache"] if back_forward_cache else []
    return browser_type.launch(executable_path=chromium_path, args=LAUNCH_ARGS, ignore_default_args=ignored)


def signed_in(browser, live_server, user, **options):
    """A new browser context (a fresh cache) with ``user``'s session, and a page in it."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(**options)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.set_default_timeout(15_000)
    return page


def inside_viewport(page, selector: str) -> list[str]:
    """What of the elements matching ``selector`` lies outside the viewport (empty: all inside)."""
    size = page.viewport_size
    outside = []
    for index, element in enumerate(page.locator(selector).all()):
        box = element.bounding_box()
        if box is None:
            outside.append(f"{selector}[{index}] is not displayed")
        elif box["x"] < 0 or box["y"] < 0 or box["x"] + box["width"] > size["width"] + 0.5:
            outside.append(f"{selector}[{index}] at {box} is off the {size} viewport")
        elif box["y"] + box["height"] > size["height"] + 0.5:
            outside.append(f"{selector}[{index}] at {box} is below the fold of {size}")
    return outside


def wait_until(page, expression: str, timeout: float = 10.0) -> None:
    """Wait until the page's ``expression`` is truthy. Playwright's ``wait_for_function`` polls
    with ``eval`` inside the page, which the site's Content-Security-Policy (rightly) refuses;
    ``page.evaluate`` goes through the browser's debugging protocol instead."""
    deadline = time.monotonic() + timeout
    while not _evaluated(page, expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"the page never made {expression!r} true in {timeout:g} s")
        page.wait_for_timeout(50)


def _evaluated(page, expression: str) -> object:
    """The expression's value; False while the page navigates (a reload the page made itself)."""
    try:
        return page.evaluate(expression)
    except PlaywrightError as error:
        if "context was destroyed" in str(error) or "navigating" in str(error):
            return False
        raise
