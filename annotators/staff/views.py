"""Staff pages: the rater table, a rater's page and actions, the dispute queue, the competency analysis.

Only staff (``is_staff``) and the admin role may see them: anonymous visitors are sent to the
log-in page, everyone else (annotators, researchers) gets 403. Every action is a POST with a
reason; its GET shows the same form on a page of its own.
"""

from collections import defaultdict
from urllib.parse import urlencode

import numpy as np
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotators import journey
from annotators.competency.analysis import PAPER_COEF_PER_10_PERCENT, PAPER_SE_PER_10_PERCENT
from annotators.competency.flag_rules import FLAG_KEYS, FLAG_LABELS, rules_in_words
from annotators.competency.flags import RaterStats, flag_thresholds, rater_statistics, rater_timeline
from annotators.competency.jobs import competency_refresh_request, latest_analysis, never_queued
from annotators.competency.regression import NO_REGRESSION_NOTE
from annotators.competency.timeline_svg import timeline_svg
from annotators.models import CompetencyAnalysis, Dispute, DisputeStatus, Participation, RaterProfile, RaterState
from annotators.roles import staff_required
from annotators.staff import services as staff_services
from annotators.staff.forms import DisputeResolveForm, ReasonForm
from annotators.staff.services import dispute_rescore
from ratinggame.models import Assignment, Pool, Rating


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _plain(value: object) -> str:
    return "–" if value is None else str(value)


# (key, heading, formatter, what the column means): the sortable columns of the rater table, in
# order. The meaning is the heading's tooltip and the table's legend.
COLUMNS = (
    ("username", "Rater", _plain, "The rater's username; open it for their timeline, ratings and actions."),
    ("state", "State", _plain, "Where the rater is: tutorial, probation, game or suspended."),
    ("flag_count", "Flags", _plain, "Behaviour that deserves a look (the rules are below the table)."),
    (
        "tutorial_score",
        "Tutorial",
        _plain,
        f"Tutorial score out of {journey.TUTORIAL_MAX_POINTS} (the training score); – before it ends.",
    ),
    (
        "probation_rounds",
        "Probation rounds",
        _plain,
        f"Probation rounds started (each one is {journey.PROBATION_SIZE} pairs).",
    ),
    ("game_score", "Game score", _plain, "Game points now (reset to 0 by a failed qualification window)."),
    ("ratings", "Ratings", _plain, "Ratings given, every stage, excluded ones too."),
    ("exact_rate", "Exact", _percent, "Share of compared ratings equal to the reference."),
    ("adjacent_rate", "Adjacent", _percent, "Share of compared ratings one level off the reference."),
    ("lack_rate", "Lack", _percent, "Share of compared ratings two or more levels off the reference."),
    ("mean_abs_deviation", "Mean |r − c|", lambda v: _number(v, 2), "Mean distance from the reference, in levels."),
    ("median_seconds", "Median s", _number, "Median seconds between being shown a pair and rating it."),
    ("near_floor_share", "At floor", _percent, "Share of ratings within 1 second of the minimum time per rating."),
    ("longest_run", "Longest run", _plain, "Most identical ratings in a row."),
    ("prime_equal_share", "= prime", _percent, "Share of game ratings equal to the pair's first model prime, rounded."),
    (
        "control_recent_agreement",
        "Control agreement",
        lambda v: _number(v, 2),
        "Mean agreement with the experts (exact 2, one level off 1, otherwise 0) over the latest control pairs "
        "the drift rule reads; the rater's page gives the number and the overall mean.",
    ),
    ("skips", "Skips", _plain, "Game pairs passed with “Skip this pair” (no reason, not a report)."),
    ("open_disputes", "Open disputes", _plain, "Disputes of this rater waiting for an answer."),
    ("competency", "Competency", lambda v: _number(v, 2), "Competency in logits, from the latest analysis."),
    (
        "rater_quality",
        "DS accuracy",
        _percent,
        "Expected share of this rater's ratings at the true level (Dawid-Skene model, latest analysis).",
    ),
)
SORT_KEYS = {key for key, *_ in COLUMNS}
# What a phone shows of the table by default: "Show all columns" (?columns=all) shows the rest.
COMPACT_COLUMNS = frozenset({"username", "state", "game_score", "ratings", "flag_count"})
# What a laptop leaves out by default, so that the table fits a 1280-px screen with every flag in
# view: the rest of the agreement split (Exact and Mean |r - c| stay), the longest run (the
# straight-liner flag reads it) and open disputes (counted above the table).
WIDE_COLUMNS = frozenset({"adjacent_rate", "lack_rate", "longest_run", "open_disputes"})


def _column_class(key: str) -> str:
    """The cell's class: "more" past a phone's columns, "wide" past a laptop's."""
    if key in COMPACT_COLUMNS:
        return ""
    return "more wide" if key in WIDE_COLUMNS else "more"


def _sort_value(stats: RaterStats, key: str) -> object:
    if key == "flag_count":
        return len(stats.flags)
    value = getattr(stats, key)
    return value.lower() if isinstance(value, str) else value


def _with_competency(rows: list[RaterStats], analysis: CompetencyAnalysis | None) -> list[RaterStats]:
    abilities = analysis.abilities if analysis is not None else {}
    quality = analysis.rater_quality if analysis is not None else {}
    for row in rows:
        row.competency = (abilities.get(str(row.profile_id)) or [None])[0]
        row.rater_quality = quality.get(str(row.profile_id))
    return rows


def _filtered_sorted(rows: list[RaterStats], params: dict) -> tuple[list[RaterStats], str]:
    if params["state"]:
        rows = [r for r in rows if r.state == params["state"]]
    if params["flag"]:
        rows = [r for r in rows if params["flag"] in r.flags]
    if params["q"]:
        rows = [r for r in rows if params["q"].lower() in r.username.lower()]
    sort = params["sort"] if params["sort"].lstrip("-") in SORT_KEYS else "username"
    key, descending = sort.lstrip("-"), sort.startswith("-")
    present = [r for r in rows if _sort_value(r, key) is not None]
    missing = [r for r in rows if _sort_value(r, key) is None]  # always last, either direction
    present.sort(key=lambda r: (_sort_value(r, key), r.profile_id), reverse=descending)
    return present + missing, sort


def _headers(params: dict, sort: str) -> list[dict]:
    headers = []
    for key, label, _, meaning in COLUMNS:
        current = sort.lstrip("-") == key
        descending = sort.startswith("-")
        next_sort = f"-{key}" if current and not descending else key
        query = {k: v for k, v in params.items() if v and k != "sort"} | {"sort": next_sort}
        headers.append(
            {
                "label": label,
                "meaning": meaning,
                "url": "?" + urlencode(query),
                "aria_sort": ("descending" if descending else "ascending") if current else "none",
                "class": _column_class(key),
            }
        )
    return headers


def _analysis_context() -> dict:
    analysis = latest_analysis()
    newest = CompetencyAnalysis.objects.order_by("-created_at", "-id").first()
    return {
        "analysis": analysis,
        "analysis_newest": newest if newest is not None and newest != analysis else None,
        "analysis_in_progress": newest is not None
        and newest.status in (CompetencyAnalysis.Status.QUEUED, CompetencyAnalysis.Status.RUNNING),
        "paper_coef": PAPER_COEF_PER_10_PERCENT,
        "paper_se": PAPER_SE_PER_10_PERCENT,
        "no_regression_note": NO_REGRESSION_NOTE,
        "every": settings.RATINGGAME_COMPETENCY_EVERY,
        "p_value": _p_value(analysis.regression.get("p_value") if analysis is not None else None),
    }


def _p_value(p: float | None) -> str:
    if p is None:
        return "–"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


@staff_required
@require_http_methods(["GET"])
def dashboard(request: HttpRequest) -> HttpResponse:
    analysis = latest_analysis()
    params = {key: request.GET.get(key, "").strip() for key in ("state", "flag", "q", "sort", "columns")}
    rows, sort = _filtered_sorted(_with_competency(rater_statistics(), analysis), params)
    table = [
        {
            "stats": r,
            "cells": [
                (key, fmt(_sort_value(r, key) if key != "username" else r.username), _column_class(key))
                for key, _, fmt, _ in COLUMNS
            ],
            "flags": [(f, FLAG_LABELS[f]) for f in r.flags],
        }
        for r in rows
    ]
    all_columns = params["columns"] == "all"
    others = {k: v for k, v in params.items() if v and k != "columns"}
    context = {
        "table": table,
        "headers": _headers(params, sort),
        "params": params,
        "all_columns": all_columns,
        "columns_toggle": "?" + urlencode(others if all_columns else others | {"columns": "all"}),
        "states": RaterState.choices,
        "flags": [(f, FLAG_LABELS[f]) for f in FLAG_KEYS],
        "thresholds": flag_thresholds(),
        "flag_rules": rules_in_words(flag_thresholds()),
        "open_disputes": Dispute.objects.filter(status=DisputeStatus.OPEN).count(),
        **_analysis_context(),
    }
    return render(request, "annotators/staff/dashboard.html", context)


@staff_required
@require_http_methods(["GET"])
def rater_detail(request: HttpRequest, profile_id: int) -> HttpResponse:
    profile = get_object_or_404(RaterProfile.objects.select_related("user"), pk=profile_id)
    analysis = latest_analysis()
    stats = _with_competency(rater_statistics([profile.pk]), analysis)[0]
    timeline = rater_timeline(profile)
    rows = timeline.rows
    svg = timeline_svg(
        timeline.exact_share,
        timeline.agreement_share,
        rows.seconds,
        rows.stage,
        floor_seconds=journey.min_seconds(Pool.GAME),
        window=timeline.window,
        title=f"Agreement and speed of {profile.user.get_username()} over their ratings",
    )
    last = slice(-50, None)
    ratings = Rating.objects.select_related("pair").in_bulk(rows.rating_id[last].tolist())
    held = pairs_held_by(request.user)
    recent = [
        {"rating": ratings[rid], "reference": None if not np.isfinite(ref) else int(ref), "seconds": secs}
        for rid, ref, secs in zip(rows.rating_id[last].tolist(), rows.reference[last], rows.seconds[last], strict=True)
        if ratings[rid].pair_id not in held
    ][::-1]
    ability = (analysis.abilities.get(str(profile.pk)) if analysis is not None else None) or [None, None]
    context = {
        "profile": profile,
        # A withdrawn rater's external id stays in the pay records only.
        "participation": Participation.objects.filter(profile=profile, profile__withdrawn_at__isnull=True).first(),
        "stats": stats,
        "analysis_not_converged": analysis is not None and analysis.details.get("converged") is False,
        "flags": [(f, FLAG_LABELS[f]) for f in stats.flags],
        "rates": {
            key: _percent(getattr(stats, key))
            for key in ("exact_rate", "adjacent_rate", "lack_rate", "near_floor_share", "prime_equal_share")
        },
        "timeline_svg": svg,
        "recent": recent,
        "recent_hidden": len(rows.rating_id[last]) - len(recent),
        "tutorial_max": journey.TUTORIAL_MAX_POINTS,
        "drift_threshold": journey.drift_threshold(),
        "drift_window": journey.drift_window(),
        "ability": ability,
        "actions": profile.actions.select_related("actor")[:50],
        "disputes": Dispute.objects.filter(rating__rater_id=profile.user_id).select_related("rating")[:50],
        "rounds": profile.probation_rounds.all(),
        "available": _available_actions(profile),
    }
    return render(request, "annotators/staff/rater.html", context)


# action name -> (service, button label, explanation)
ACTIONS = {
    "suspend": (
        staff_services.rater_suspend,
        "Suspend",
        "The rater can no longer rate until reinstated.",
    ),
    "reinstate": (
        staff_services.rater_reinstate,
        "Reinstate",
        "The rater goes back to the state they had before the suspension.",
    ),
    "probation": (
        staff_services.rater_send_to_probation,
        "Send back to probation",
        f"The rater starts a new probation round of up to {journey.PROBATION_SIZE} expert-rated pairs; "
        "the game score is kept.",
    ),
}


def _available_actions(profile: RaterProfile) -> list[dict]:
    names = []
    if profile.state != RaterState.SUSPENDED:
        names.append("suspend")
    else:
        names.append("reinstate")
    if profile.state in (RaterState.GAME, RaterState.SUSPENDED):
        names.append("probation")
    return [
        {
            "name": n,
            "label": ACTIONS[n][1],
            "help": ACTIONS[n][2],
            "url": reverse(f"staff:rater_{n}", args=[profile.pk]),
            "form": ReasonForm(auto_id=f"id_{n}_%s"),
        }
        for n in names
    ]


@staff_required
@require_http_methods(["GET", "POST"])
def rater_action(request: HttpRequest, profile_id: int, action: str) -> HttpResponse:
    profile = get_object_or_404(RaterProfile.objects.select_related("user"), pk=profile_id)
    service, label, help_text = ACTIONS[action]
    form = ReasonForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                service(profile=profile, actor=request.user, reason=form.cleaned_data["reason"])
            except staff_services.ActionRefused as refused:
                form.add_error(None, refused.message)
            else:
                messages.success(request, f"{label}: done for {profile.user.get_username()}.")
                return redirect("staff:rater", profile_id=profile.pk)
        status = 400
    context = {"profile": profile, "form": form, "label": label, "help": help_text}
    return render(request, "annotators/staff/rater_action.html", context, status=status)


def pairs_held_by(user) -> set[int]:
    """The pairs ``user`` is rating now: SPEC 5 hides their ratings and consensus from them,
    whatever roles they hold, until they have rated."""
    return set(Assignment.objects.pairs_held_by(user).values_list("pair_id", flat=True))


def _dispute_rows(disputes: list[Dispute], viewer) -> list[dict]:
    """Each dispute with its rating re-scored against the OTHER raters now (one query for all):
    what staff see before they accept, and what accepting restores. A dispute on a pair the
    viewer is rating now is ``hidden`` (SPEC 5)."""
    held = pairs_held_by(viewer)
    counted: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for pair_id, rating_id, value in (
        Rating.objects.counted()
        .filter(pair_id__in={d.rating.pair_id for d in disputes})
        .values_list("pair_id", "id", "value")
    ):
        counted[pair_id].append((rating_id, value))
    rows = []
    for dispute in disputes:
        rating = dispute.rating
        others = [value for rating_id, value in counted[rating.pair_id] if rating_id != rating.pk]
        rows.append(
            {
                "dispute": dispute,
                # One dispute per rating: what it restored is all that was restored for the rating.
                "rescore": dispute_rescore(rating, others=others, restored=dispute.points_restored),
                "hidden": rating.pair_id in held,
                "form": DisputeResolveForm(auto_id=f"id_dispute{dispute.pk}_%s", rating_excluded=rating.excluded),
            }
        )
    return rows


@staff_required
@require_http_methods(["GET"])
def dispute_queue(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", DisputeStatus.OPEN)
    if status not in DisputeStatus.values:
        status = DisputeStatus.OPEN
    disputes = list(
        Dispute.objects.filter(status=status)
        .select_related("rating__pair__image", "rating__rater__rater", "resolved_by")
        .order_by("created_at" if status == DisputeStatus.OPEN else "-resolved_at")[:200]
    )
    context = {
        "rows": _dispute_rows(disputes, request.user),
        "status": status,
        "statuses": DisputeStatus.choices,
    }
    return render(request, "annotators/staff/disputes.html", context)


@staff_required
@require_http_methods(["GET", "POST"])
def dispute_resolve(request: HttpRequest, dispute_id: int) -> HttpResponse:
    disputes = Dispute.objects.select_related("rating__pair__image", "rating__rater__rater")
    dispute = get_object_or_404(disputes, pk=dispute_id)
    form = DisputeResolveForm(request.POST or None, rating_excluded=dispute.rating.excluded)
    row = _dispute_rows([dispute], request.user)[0]
    status = 200
    if request.method == "POST" and row["hidden"]:
        status = 400  # the page says why (annotators/staff/_dispute.html)
    elif request.method == "POST":
        if form.is_valid():
            try:
                staff_services.dispute_resolve(
                    dispute=dispute,
                    actor=request.user,
                    accept=form.cleaned_data["decision"] == "accept",
                    note=form.cleaned_data["note"],
                )
            except staff_services.ActionRefused as refused:
                form.add_error(None, refused.message)
            else:
                messages.success(request, f"Dispute {dispute.pk} resolved.")
                return redirect("staff:disputes")
        status = 400
    context = {"row": row, "form": form}
    return render(request, "annotators/staff/dispute_resolve.html", context, status=status)


@staff_required
@require_http_methods(["GET", "POST"])
def competency_refresh(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        analysis = competency_refresh_request(requested_by=request.user)
        analysis.refresh_from_db()  # with tasks inline it has already run
        if analysis.status == CompetencyAnalysis.Status.DONE:
            messages.success(request, "The competency analysis has been refreshed.")
        elif never_queued(analysis):
            messages.error(
                request,
                "The competency analysis could not be started: the task broker is unreachable. "
                "It will be asked again at the next periodic check, or refresh again later.",
            )
        elif analysis.status == CompetencyAnalysis.Status.FAILED:
            messages.error(request, f"The competency analysis failed: {analysis.error}")
        else:
            messages.info(request, "The competency analysis is running; reload the dashboard in a moment.")
        return redirect(reverse("staff:dashboard") + "#competency")
    return render(request, "annotators/staff/competency_refresh.html", _analysis_context())
