"""The rating screen's fragments: the pieces the one-request rating (``ratinggame.play``) renders
with every answer, and the pages render too (the feedback panel, the screen's title).

They are Jinja2 templates (``templates/jinja2/``), each the one home of its piece, which the Django
pages take as rendered HTML. Why not Django's engine: it rendered the feedback panel and the title
of each in-place rating in about 0.5 ms of CPU, a quarter of the page's web instructions per
rating, and the whole of its gap to the API's (``bench/bench_web_instructions.py``); Jinja2
compiles a template to Python and renders the same HTML in a quarter of the time. Autoescaping is
on, as in Django; names the context lacks render empty (and their attributes too), as in Django.
"""

from django.template import engines
from django.template.defaultfilters import capfirst, pluralize
from django.utils.safestring import SafeString, mark_safe
from jinja2 import ChainableUndefined, Environment


def environment(**options) -> Environment:
    """The fragments' Jinja2 environment: autoescaping always; a name the context lacks renders
    empty, as in Django, in debug mode too (Django's backend would print it there as written);
    Django's two filters they use."""
    options.pop("autoescape", None)
    options["undefined"] = ChainableUndefined
    env = Environment(autoescape=True, **options)
    env.filters.update(capfirst=capfirst, pluralize=pluralize)
    return env


def render_fragment(name: str, context: dict) -> SafeString:
    """The fragment ``name`` rendered with ``context``: HTML a Django template shows as it is."""
    return mark_safe(engines["jinja2"].get_template(name).render(context))  # noqa: S308 - autoescaped


def play_title(served, progress, session=None) -> SafeString:
    """The rating screen's title and progress for the pair ``served`` (a page's, or the next pair's
    shown in place); ``session``: a study participant's session progress (``SessionProgress``)."""
    context = {"stage": served.stage, "served": served, "progress": progress, "session": session}
    return render_fragment("ratinggame/_play_title.html", context)
