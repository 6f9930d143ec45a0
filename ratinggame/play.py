"""The rating page in one request (``POST /play/submit/``): what the page's script sends.

The script posts the rating form (session and CSRF, as the form itself would); the rating and
the rater's next pair are one call of the rating service (``rating_submit(serve_next=True)``),
one transaction, with the rater's session, user and profile read in its first query
(``ratinggame.game.signed_in``). The answer is JSON: the feedback as the feedback page shows it
(its panel, the fragment ``ratinggame/_feedback_panel.html`` of ``ratinggame.fragments``, rendered
from the feedback alone, no query) and the next pair, which the page shows in place when the rater
presses "Next pair". Each keeps its URL (the feedback page's, and ``/play/<stage>/<assignment>/``
for a pair): the script pushes them, and Back or a reload shows what the server holds there.

Whatever the in-place screen does not show (the end of a stage, the first game rating with its
points table, a pair rated already in another tab, nothing left to rate) answers ``{"page": url}``:
the script opens that page, as the form without a script would; so does a study participant whose
session the rating ended (SPEC 7: the feedback page's "Next" leads to the completion page). A refusal answers
``{"code", "message"}`` with its status; the too-early and invalid ones leave the pair open (the
script says why and keeps the choice), the others also name the page to open (``"page"``).
"""

import functools
from dataclasses import dataclass, replace
from types import SimpleNamespace

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, JsonResponse
from django.shortcuts import resolve_url
from django.utils import timezone
from django.utils.html import html_safe
from django.views.decorators.http import require_POST

from annotators import journey, services
from annotators.forms import DisputeForm
from annotators.progress import StageProgress, stage_progress
from ratinggame import drafts, game
from ratinggame.feedback_text import announcement, feedback_panel_context
from ratinggame.fragments import play_title, render_fragment
from ratinggame.game.signed_in import rater_by_session
from ratinggame.links import fixed_url, url_of
from ratinggame.models import Pool
from ratinggame.pairs.derivatives import display_image


class _NotSignedIn(Exception):
    """No rater in the request's session by the one-query read: Django's own handling decides."""


@require_POST
def submit(request: HttpRequest) -> JsonResponse:
    now = timezone.now()
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")
    if not session_key:
        return _not_signed_in()
    try:
        assignment_id = int(request.POST.get("assignment", ""))
    except ValueError:
        return _refused("invalid", "This form did not say which pair it rates.", 400, page=fixed_url("annotators:play"))
    value = request.POST.get("value", "")

    def locked_rater():
        found = rater_by_session(session_key, now)
        if found is None:
            raise _NotSignedIn
        request.user = found.user  # for what follows (the request log) without reading it again
        return found.user, found.profile

    submitted = {"assignment_id": assignment_id, "value": value, "now": now, "serve_next": True}
    try:
        try:
            feedback = game.rating_submit(rater=None, locked_rater=locked_rater, **submitted)
        except _NotSignedIn:
            # A session Django reads otherwise (an old hash, a user with no rater profile yet) or none.
            if not request.user.is_authenticated:
                return _not_signed_in()
            feedback = game.rating_submit(rater=request.user, **submitted)
    except game.RatingRejected as rejected:
        if rejected.code in game.SAME_PAIR_AGAIN:
            return _refused(rejected.code, rejected.message, rejected.status)
        if rejected.code == game.SESSION_ENDED:
            # The completion page says it all (and has the code).
            page = fixed_url("annotators:study_complete")
            return _refused(rejected.code, rejected.message, rejected.status, page=page)
        messages.error(request, rejected.message)
        return _refused(rejected.code, rejected.message, rejected.status, page=fixed_url("annotators:play"))
    return JsonResponse(_answer(request, feedback, value, now))


def _not_signed_in() -> JsonResponse:
    login = f"{resolve_url(settings.LOGIN_URL)}?next={fixed_url('annotators:play')}"
    return _refused("not_signed_in", "Your session has ended: log in again to go on.", 401, page=login)


def _refused(code: str, message: str, status: int, *, page: str | None = None) -> JsonResponse:
    body = {"code": code, "message": message}
    if page:
        body["page"] = page
    return JsonResponse(body, status=status)


def _answer(request: HttpRequest, feedback: "game.Feedback", value: str, now) -> dict:
    feedback_url = url_of("feedback", pk=feedback.assignment_id)
    served = feedback.next
    if feedback.already_rated and value != str(feedback.value):
        drafts.draft_keep(request, drafts.NOT_TAKEN, assignment_id=feedback.assignment_id, value=value)
    first_game_rating = feedback.window is not None and feedback.window.count == 1
    # A study participant whose session this rating ended (nothing is served then): the feedback
    # page, then (its "Next") the completion page, as without a script.
    if feedback.already_rated or feedback.transition or first_game_rating or served is None:
        return {"page": feedback_url}
    if served.stage != feedback.stage:
        return {"page": feedback_url}
    context = {
        **feedback_panel_context(feedback),
        "fb": feedback,
        "stage": feedback.stage,
        "continue_label": "Next pair",
        "dispute_offered": _dispute_offered(feedback),
        "dispute_form": _dispute_form_blank(),
        # No CSRF token of its own: the page's script gives the panel's form the token the page
        # holds (any masked token of the session's secret is valid). Masking one per answer took
        # two random strings and a CSRF cookie sent again with every rating.
    }
    progress = _progress_after(request, feedback, served)
    next_title = play_title(served, progress, feedback.session_progress)
    return {
        "feedback": {
            "url": feedback_url,
            "rating_id": feedback.rating_id,
            "html": render_fragment("ratinggame/_feedback_in_place.html", context),
            "announce": announcement(feedback, None),
            "points_class": context["points_class"],
            "title_html": _rated_title(served, progress, next_title, feedback),
        },
        "next": _next_pair(served, next_title, now),
    }


@html_safe
@dataclass(frozen=True)
class _RenderedField:
    """A form field rendered once: what the panel's template reads of a bound field."""

    html: str
    label: str
    help_text: str
    id_for_label: str
    auto_id: str

    def __str__(self) -> str:
        return self.html


@functools.cache
def _dispute_form_blank() -> SimpleNamespace:
    """The blank dispute form of the in-place feedback, its field rendered once per process.

    Every game rating's panel offers it, always the same HTML; Django renders a widget through the
    template engine, and rendering it anew took 8% of the instructions of the page's rating
    (``bench/bench_web_instructions.py``). The feedback page renders its own form, which may carry
    a draft.
    """
    field = DisputeForm()["comment"]
    return SimpleNamespace(
        comment=_RenderedField(str(field), field.label, field.help_text, field.id_for_label, field.auto_id)
    )


def _dispute_offered(feedback: "game.Feedback") -> bool:
    """As the feedback page decides it (``dispute_refusal``), for a rating just stored: not
    excluded, not disputed yet (nothing to read). What the rule reads of the rating, without
    building a model instance for it."""
    stage = Pool.ATTENTION if feedback.attention_check else feedback.stage
    rating = SimpleNamespace(stage=stage, excluded=False, reference=feedback.reference, points=feedback.points)
    return services.dispute_refusal(rating, disputed=False) is None


def _progress_after(request: HttpRequest, feedback: "game.Feedback", served: "game.Served") -> StageProgress:
    """The rater's progress in the stage after this rating (``served``, the next pair, is of the same stage)."""
    if served.stage == Pool.GAME:
        return StageProgress(stage=Pool.GAME, score=feedback.stage_total, window=feedback.window)
    return stage_progress(request.user, served.stage)


def _rated_title(served: "game.Served", progress: StageProgress, next_title: str, feedback: "game.Feedback") -> str:
    """The screen's title beside the feedback: the progress after this rating, as the panel gives
    it; the tutorial's and probation's name the pair just rated (the one before ``served``), the
    game's name no pair (the next pair's title, as it is)."""
    if not served.total:
        return next_title
    return play_title(replace(served, position=served.position - 1), progress, feedback.session_progress)


def _next_pair(served: "game.Served", title_html: str, now) -> dict:
    image = display_image(served.image)
    return {
        "assignment_id": served.assignment_id,
        "url": url_of("rate_pair", served.stage, pk=served.assignment_id),
        "caption": served.caption,
        "image": {"src": image.src, "srcset": image.srcset, "width": image.width, "height": image.height},
        "original_url": served.image_url,
        "wait_ms": max(0, round((served.min_submit_at - now).total_seconds() * 1000)),
        "min_ms": round(journey.min_seconds(served.stage) * 1000),
        "title_html": title_html,
        "skip_open": served.skip_open,
        "skip_from": served.skip_from,
    }
