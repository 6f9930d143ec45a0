"""The rating screen's fragments (``ratinggame.fragments``): Jinja2 templates that the pages and the
one-request rating take rendered. That the in-place feedback is the feedback page's panel, and that
both escape what they show, is checked through the pages in ``test_play_submit.py``."""

from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.template.backends.jinja2 import Jinja2


def fragments_engine(**options) -> Jinja2:
    """The fragments' engine as Django builds it from the settings now (debug mode included), with
    ``options`` added to its own."""
    params = next(engine for engine in django_settings.TEMPLATES if engine["BACKEND"].endswith(".Jinja2"))
    params = {name: value for name, value in params.items() if name != "BACKEND"}
    return Jinja2({**params, "NAME": "fragments", "OPTIONS": {**params["OPTIONS"], **options}})


@pytest.mark.parametrize("debug", [False, True])
def test_what_the_context_lacks_renders_empty_in_debug_mode_too(settings, debug):
    """Django's Jinja2 backend prints an undefined name as written (``{{ name }}``) in debug mode,
    the embedded default's: the in-place feedback, which leaves out what only the feedback page
    shows, must not."""
    settings.DEBUG = debug
    fb = SimpleNamespace(value=4, reference=3, points=0, first_rater=False, stage_total=5, level=1, window=None)
    html = fragments_engine().get_template("ratinggame/_feedback_panel.html").render({"fb": fb, "stage": "game"})
    assert 'Your rating</dt><dd class="fb-big">4<' in html and "Consensus rating" in html
    assert "{{" not in html and "game_points" not in html and "csrfmiddlewaretoken" not in html


def test_the_fragments_autoescape_whatever_the_options_say():
    html = fragments_engine(autoescape=False).from_string("{{ text }}").render({"text": "<b>&</b>"})
    assert html == "&lt;b&gt;&amp;&lt;/b&gt;"
