"""The site's pages: home, the rating screen (tutorial, probation and game share it), feedback,
disputes and the rater's withdrawal.

Views validate input, call one service of ratinggame.game, and render. Every POST answers with
a redirect (post/redirect/get), so that reloading the page that follows never sends a rating
or a dispute again; a rejection (too early, expired, not yours, ...) comes back as a clear
message on the page it redirects to, never a server error. A GET the rules refuse is a page
with the message and the status code the service gives.
"""

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from annotators import journey, progress, services
from annotators.forms import DisputeForm
from annotators.gates import PLAYING_STEPS, STEP_STAGES, guide_context, step_gate
from annotators.journey import Step
from annotators.study.completion import session_of
from annotators.study.gates import session_gate
from ratinggame import drafts, game
from ratinggame.feedback_text import announcement, feedback_panel_context, not_taken_words, outcome_for
from ratinggame.fragments import play_title, render_fragment
from ratinggame.game.prefetch import next_pair_image
from ratinggame.game.reports import REPORT_MAX_CHARS
from ratinggame.game.withdrawal import rater_withdraw
from ratinggame.links import fixed_url
from ratinggame.models import CaptionPair, Image, Rating, ReportReason
from ratinggame.pairs.derivatives import display_image
from scoring.consensus import points_table

STAGE_STEPS = {stage: step for step, stage in STEP_STAGES.items()}
HOME_CALLS = {
    Step.CONSENT: "Start playing",
    Step.TUTORIAL: "Continue the tutorial",
    Step.PROBATION: "Continue probation",
    Step.GAME: "Continue playing",
    Step.SUSPENDED: "Your account is suspended",
}


def home(request: HttpRequest) -> HttpResponse:
    counts = dict(CaptionPair.objects.values_list("pool").annotate(n=Count("id")).order_by())
    sample = CaptionPair.objects.game().one_per_image(6).select_related("image")
    call = HOME_CALLS[progress.current_step(request.user)] if request.user.is_authenticated else None
    return render(
        request,
        "ratinggame/home.html",
        {"counts": counts, "images": Image.objects.count(), "sample": sample, "call": call},
    )


@login_required
@require_http_methods(["GET", "POST"])
def rate(request: HttpRequest, stage: str, assignment_id: int | None = None) -> HttpResponse:
    """The rating screen of the rater's open pair (``/play/<stage>/``), or of one pair
    (``/play/<stage>/<assignment>/``, the URL the page's script gives each pair it shows): a pair
    no longer open (rated, skipped, expired) gives way to the one open now, with its own URL."""
    if request.method == "POST":
        return _rate_submit(request, stage)
    session = session_of(user=request.user, now=timezone.now())  # a study participant's, else None
    if gate := step_gate(request.user, {STAGE_STEPS[stage]}) or session_gate(session):
        return gate
    try:
        served = game.pair_serve(rater=request.user)
    except game.RatingRejected as rejected:
        return rejected_response(request, rejected)
    if served is None:
        return render(request, "ratinggame/no_pairs.html", {**guide_context(request.user), "session": session})
    if assignment_id is not None and served.assignment_id != assignment_id:
        return redirect("rate_pair", stage=served.stage, assignment_id=served.assignment_id)
    refused, _ = drafts.draft_take(request, drafts.RATING, assignment_id=served.assignment_id)
    report, stale_report = drafts.draft_take(request, drafts.REPORT, assignment_id=served.assignment_id)
    if stale_report:
        # The reported pair is no longer on screen: the reason stands alone above the pair now open.
        messages.error(request, stale_report["message"])
    return rate_response(
        request,
        served,
        error=refused.get("message", ""),
        chosen=refused.get("value", ""),
        report=report,
        session=session.progress if session is not None else None,
    )


@login_required
@require_POST
def session_finish(request: HttpRequest) -> HttpResponse:
    """A study participant who finds nothing left to rate ends their session here (the completion
    page follows); a pair that has come free since is shown instead."""
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        served = game.session_finish(rater=request.user)
    except game.RatingRejected as rejected:
        return rejected_response(request, rejected)
    if served is not None:
        messages.info(request, "A pair has come free to rate: your session goes on.")
        return redirect("rate_pair", stage=served.stage, assignment_id=served.assignment_id)
    return redirect("annotators:study_complete")


def _rate_submit(request: HttpRequest, stage: str) -> HttpResponse:
    """Every answer is a redirect, so that reloading the page that follows never sends the
    rating again: a submission refused as too early would otherwise be stored on a reload
    once the seconds had passed."""
    # Consent and suspension are the state machine's; the stage is checked by rating_submit
    # itself, so that submitting the same form twice after the last pair of a stage (the stage
    # has changed by then) shows the first result instead of a wrong-page redirect.
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        assignment_id = int(request.POST.get("assignment", ""))
    except ValueError:
        messages.error(request, "This form did not say which pair it rates. Here is the pair to rate now.")
        return redirect("annotators:play")
    value = request.POST.get("value", "")
    try:
        feedback_ = game.rating_submit(rater=request.user, assignment_id=assignment_id, value=value)
    except game.RatingRejected as rejected:
        if rejected.code in game.SAME_PAIR_AGAIN:
            kept = value if value in {"1", "2", "3", "4", "5"} else ""
            drafts.draft_keep(request, drafts.RATING, assignment_id=assignment_id, value=kept, message=rejected.message)
            return redirect("rate", stage=stage)
        if rejected.code == game.SESSION_ENDED:
            return redirect("annotators:study_complete")
        messages.error(request, rejected.message)
        return redirect("annotators:play")
    if feedback_.already_rated and value != str(feedback_.value):
        # Rated meanwhile in another tab or window: that rating stands, and the feedback says that
        # this one was not taken. The same value again (a double click) needs no word.
        drafts.draft_keep(request, drafts.NOT_TAKEN, assignment_id=feedback_.assignment_id, value=value)
    return redirect("feedback", assignment_id=feedback_.assignment_id)


@login_required
@require_POST
def skip(request: HttpRequest) -> HttpResponse:
    """ "Skip this pair" on a game screen: the pair is passed without a rating and the next one shown."""
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        assignment_id = int(request.POST.get("assignment", ""))
    except ValueError:
        assignment_id = None
    # The rating page's script asks for JSON: a refusal is then said on the page, which keeps the
    # pair and its countdown; without a script the refusal is a message on the page reloaded.
    in_place = request.accepts("application/json") and not request.accepts("text/html")
    try:
        skipped = game.pair_skip(rater=request.user, assignment_id=assignment_id)
    except game.RatingRejected as rejected:
        if rejected.code == game.SESSION_ENDED:
            page = fixed_url("annotators:study_complete")
            return JsonResponse({"page": page}) if in_place else redirect(page)
        if in_place:
            return JsonResponse({"code": rejected.code, "message": rejected.message}, status=rejected.status)
        messages.error(request, rejected.message)
    else:
        left = skipped.skips_left
        more = (
            f"You can skip {left} more pair{'s' if left != 1 else ''} for now."
            if left
            else "That was your last skip for now: another one comes with every ten game pairs."
        )
        messages.success(request, f"Skipped: no rating, no points. {more}")
    return JsonResponse({"page": fixed_url("annotators:play")}) if in_place else redirect("annotators:play")


def rate_response(
    request: HttpRequest,
    served: "game.Served",
    *,
    error: str = "",
    chosen: str = "",
    report: dict | None = None,
    session=None,
) -> HttpResponse:
    """The rating screen of ``served``; ``error`` and ``chosen``: a refused rating's reason and
    choice; ``report``: a refused report's reason, details and message (``drafts.REPORT``);
    ``session``: a study participant's session progress (``SessionProgress``)."""
    now = timezone.now()
    # The wait is the server's min_submit_at minus the server's now: the page only counts it
    # down with the browser's monotonic clock, so a wrong clock on the rater's machine can
    # neither shorten nor lengthen it (and the server checks again on submit).
    wait_ms = max(0, round((served.min_submit_at - now).total_seconds() * 1000))
    image = served.image
    upcoming = next_pair_image(rater=request.user, served=served)
    context = {
        **guide_context(request.user),
        "served": served,
        "stage": served.stage,
        "error": error,
        "chosen": chosen,
        "wait_ms": wait_ms,
        "server_now_ms": round(now.timestamp() * 1000),
        "min_submit_ms": round(served.min_submit_at.timestamp() * 1000),
        "min_seconds": f"{journey.min_seconds(served.stage):g}",
        "min_ms": round(journey.min_seconds(served.stage) * 1000),
        "report_reasons": ReportReason.choices,
        "report": report or {},
        "report_max_chars": REPORT_MAX_CHARS,
        "title": play_title(served, progress.stage_progress(request.user, served.stage), session),
        "image": image,
        "original_url": served.image_url,
        # Another caption of the same image needs nothing fetched.
        "upcoming": display_image(upcoming) if upcoming is not None and upcoming.pk != image.pk else None,
    }
    return render(request, "ratinggame/rate.html", context)


@login_required
def feedback(request: HttpRequest, assignment_id: int) -> HttpResponse:
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        feedback_ = game.feedback_for(rater=request.user, assignment_id=assignment_id)
    except game.RatingRejected as rejected:
        return rejected_response(request, rejected)
    return feedback_response(request, feedback_)


def feedback_response(request: HttpRequest, feedback_: "game.Feedback") -> HttpResponse:
    fb = feedback_
    next_step = progress.current_step(request.user)
    window = fb.window
    # Its dispute (one at most) read once, for the refusal check and the page.
    rating = Rating.objects.select_related("pair__image").prefetch_related("disputes").get(pk=fb.rating_id)
    draft, _ = drafts.draft_take(request, drafts.DISPUTE, assignment_id=fb.assignment_id)
    not_taken, _ = drafts.draft_take(request, drafts.NOT_TAKEN, assignment_id=fb.assignment_id)
    not_taken_text = not_taken_words(not_taken["value"], fb.value) if not_taken else ""
    refusal = services.dispute_refusal(rating)
    # A study session that has ended (with this rating or before): "Finish" leads to the code.
    session = session_of(user=request.user, now=timezone.now())
    ended = session is not None and session.ended
    next_round = _round_after(request.user, rating) if fb.transition == "probation_failed" and not ended else ""
    if next_round and session is not None and session.progress.last_round:
        next_round += " It is your last: if you do not pass it, your session in this study ends there."
    outcome = outcome_for(fb, next_round=next_round, session_ended=ended)
    panel = {
        "fb": fb,
        "stage": fb.stage,
        **feedback_panel_context(fb),
        "outcome": outcome,
        # The first game rating after entering the game: how game points differ from the tutorial's.
        "game_points_html": (
            render_to_string("annotators/_game_points.html", {"game_points": points_table()})
            if window is not None and window.count == 1
            else ""
        ),
        "not_taken": not_taken_text,
        "continue_label": _continue_label(fb, next_step, session_ended=ended),
        "disputes_html": [
            render_to_string("ratinggame/_dispute_outcome.html", {"dispute": dispute})
            for dispute in rating.disputes.all()
        ],
        "dispute_offered": refusal is None,
        "dispute_form": DisputeForm(initial={"comment": draft.get("comment", "")}),
        "dispute_errors": draft.get("errors", []),
        "csrf_token": get_token(request),
    }
    context = {
        **guide_context(request.user),
        "stage": fb.stage,
        "pair": rating.pair,
        "points_class": panel["points_class"],
        "announce": announcement(fb, outcome, not_taken=not_taken_text),
        "panel": render_fragment("ratinggame/_feedback_panel.html", panel),
    }
    return render(request, "ratinggame/feedback.html", context)


CONTINUE_LABELS = {
    Step.TUTORIAL: "Next pair",
    Step.PROBATION: "Start probation",
    Step.GAME: "Go to the game",
    Step.SUSPENDED: "Continue",
}


def _continue_label(fb: "game.Feedback", next_step: Step, *, session_ended: bool) -> str:
    if session_ended:
        return "Finish"
    if fb.transition == "probation_failed":
        return "Start the next round"
    if fb.transition == "window_passed":
        return "Keep playing"  # already in the game
    return CONTINUE_LABELS.get(next_step, "Continue") if fb.transition else "Next pair"


def _round_after(user, rating: Rating) -> str:
    """What the probation round that follows a failed one holds, in words (SPEC 2.2)."""
    after = progress.probation_round_after_failing(progress.profile_for(user), rating.submitted_at)
    if after is None:
        return "A new round starts next."
    following, repeats = after
    size = len(following.pair_order)
    if not repeats:
        return f"Next: round {following.number}, {size} pairs you have not rated before."
    return (
        f"Next: round {following.number}, {size} pairs: {size - repeats} you have not rated before and {repeats} "
        "you rated longest ago (there are not enough new ones left)."
    )


@login_required
@require_POST
def dispute(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """'Dispute this score' on a game feedback screen: files a Dispute for an admin to resolve.

    Answers with a redirect to the feedback page either way; a refused dispute comes back there
    with the reason and the comment as typed.
    """
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    try:
        feedback_ = game.feedback_for(rater=request.user, assignment_id=assignment_id)
    except game.RatingRejected as rejected:
        messages.error(request, rejected.message)
        return redirect("annotators:play")
    form = DisputeForm(request.POST)
    errors: list[str] = []
    if form.is_valid():
        try:
            services.dispute_file(
                rater=request.user, rating_id=feedback_.rating_id, comment=form.cleaned_data["comment"]
            )
        except ValidationError as error:
            errors = error.messages
    else:
        errors = [message for field_errors in form.errors.values() for message in field_errors]
    if errors:
        comment = request.POST.get("comment", "")
        drafts.draft_keep(request, drafts.DISPUTE, assignment_id=assignment_id, comment=comment, errors=errors)
    else:
        messages.success(request, "Your dispute is filed. An admin will look at it; the outcome will show here.")
    return redirect("feedback", assignment_id=assignment_id)


@login_required
@require_http_methods(["GET", "POST"])
def data_delete(request: HttpRequest) -> HttpResponse:
    """ "Delete my data": withdraw from the study, after a confirmation (ratinggame.game.withdrawal)."""
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            messages.error(request, "Tick the box to confirm that you want to withdraw.")
            return redirect("data_delete")
        excluded = rater_withdraw(user=request.user)
        logout(request)
        counted = {0: "", 1: "your rating no longer counts, and "}.get(
            excluded, f"your {excluded} ratings no longer count, and "
        )
        messages.success(
            request,
            f"You have withdrawn: {counted}your account is anonymised and closed. Thank you for taking part.",
        )
        return redirect("home")
    ratings = Rating.objects.filter(rater=request.user, excluded=False).count()
    return render(request, "ratinggame/data_delete.html", {"ratings": ratings})


def rejected_response(request: HttpRequest, rejected: "game.RatingRejected") -> HttpResponse:
    if rejected.code == game.SESSION_ENDED:
        return redirect("annotators:study_complete")
    if rejected.code == "suspended":
        return render(request, "annotators/suspended.html", status=rejected.status)
    context = {**guide_context(request.user), "message": rejected.message, "code": rejected.code}
    return render(request, "ratinggame/rating_error.html", context, status=rejected.status)
