"""Writes and reads of the rater's life outside the rating screens: sign-up, disputes, profile,
leaderboard and personal statistics. The rating screens' services are in ratinggame.game.
"""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Sum
from django.utils import timezone

from annotators import progress
from annotators.journey import (
    DRIFT_REASON,
    WINDOW_FAILED_REASON,
    WINDOW_NEEDED,
    WINDOW_SIZE,
    level_for,
    next_level_at,
)
from annotators.models import PSEUDONYM_TAKEN, Dispute, DisputeStatus, RaterProfile, RaterState
from annotators.roles import ANNOTATOR, ensure_roles
from ratinggame.models import GAME_STAGES, Pool, Rating, game_ratings
from scoring.consensus import BEST_SCORE

DISPLAY_NAME_MAX_CHARS = 40
DISPUTE_MAX_CHARS = 2000
ANONYMOUS_NAME = "Anonymous rater"
LEADERBOARD_PERIODS = {"all": None, "week": timedelta(days=7)}


def rater_signup(*, username: str, password: str, email: str = "") -> AbstractBaseUser:
    """A new annotator: the user, the annotator role and a rater profile (tutorial, no consent yet).

    The username is stored as log-in compares it, folded to NFKC (``ＲＥＳ１`` is ``RES1``), and
    must differ from every other one in more than case. Raises ValidationError with the errors
    of each field (``username``, ``email``, ``password``): a name or an e-mail address the user
    model refuses (too long once folded, characters it does not allow), a taken name, a
    password Django's validators refuse. Nothing is written then.
    """
    user_model = get_user_model()
    candidate = user_model(username=user_model.normalize_username(username), email=email)
    errors: dict[str, list] = {}
    try:
        candidate.full_clean(exclude=["password"], validate_unique=False)
    except ValidationError as error:
        errors.update(error.error_dict)
    try:
        validate_password(password, user=candidate)
    except ValidationError as error:
        errors["password"] = error.error_list
    if errors:
        raise ValidationError(errors)
    try:
        with transaction.atomic():
            if user_model.objects.filter(username__iexact=candidate.username).exists():
                raise IntegrityError("username taken")
            user = user_model.objects.create_user(username=candidate.username, email=candidate.email, password=password)
            user.groups.add(ensure_roles()[ANNOTATOR])
            RaterProfile.objects.create(user=user)
    except IntegrityError:  # taken before, or by a sign-up racing this one
        raise ValidationError({"username": ValidationError("This username is taken.", code="username_taken")}) from None
    return user


def dispute_refusal(rating: Rating, *, disputed: bool | None = None) -> ValidationError | None:
    """Why a dispute of ``rating`` could not succeed (its ``message`` is for the rater); None when it may be filed.

    The rating page offers "Dispute this score" only where this is None, and ``dispute_file``
    refuses with the same words: not a game rating (tutorial and probation are scored against
    experts), excluded (a failed qualification window: it no longer counts and its points went
    with the reset game score), the first rating of its pair (0 points by the rules, whatever
    the value), the full 2 points already, or disputed once already. ``disputed``: False for a
    rating just stored (no dispute yet: nothing read), None to read its dispute.
    """
    if rating.stage == Pool.ATTENTION:
        message, code = "An attention check scores no points: there is nothing to dispute.", "not_game"
    elif rating.stage not in GAME_STAGES:
        message, code = "Only game scores can be disputed: tutorial and probation use expert ratings.", "not_game"
    elif rating.excluded:
        reason = f" ({rating.excluded_reason})" if rating.excluded_reason else ""
        message, code = (
            f"This rating can no longer be disputed: it was excluded{reason}, so it does not count "
            "and its points went with the game score reset.",
            "excluded",
        )
    elif rating.reference is None:
        message = "You were the first to rate this pair: by the rules that scores 0 points, so nothing to dispute."
        code = "first_rater"
    elif rating.points >= BEST_SCORE:
        message, code = f"This rating scored the full {BEST_SCORE} points: there is nothing to restore.", "full_points"
    elif disputed is not False and (earlier := rating.disputes.first()) is not None:
        outcome = (
            "it is waiting for an admin"
            if earlier.status == DisputeStatus.OPEN
            else f"the dispute was {earlier.get_status_display().lower()}"
        )
        message = f"You have disputed this score already: {outcome}; its outcome is shown here and on your page."
        code = "duplicate"
    else:
        return None
    return ValidationError(message, code=code)


def dispute_file(*, rater: AbstractBaseUser, rating_id: int, comment: str) -> Dispute:
    """A 'dispute this score' comment on one of the rater's own game ratings, for an admin.

    Raises Rating.DoesNotExist for a rating that is not the rater's (existence is not told),
    ValidationError for an empty or over-long comment, or a rating ``dispute_refusal`` refuses.
    One dispute per rating, which the database enforces too (``dispute_one_per_rating``): posts
    racing each other file one.
    """
    comment = comment.strip()
    if not comment:
        raise ValidationError("Write a short reason.", code="empty")
    if len(comment) > DISPUTE_MAX_CHARS:
        raise ValidationError(f"Keep it under {DISPUTE_MAX_CHARS} characters.", code="too_long")
    with transaction.atomic():
        # The rating row lock makes two submissions of the same dispute file one.
        rating = Rating.objects.select_for_update(no_key=True).get(pk=rating_id, rater=rater)
        refusal = dispute_refusal(rating)
        if refusal is not None:
            raise refusal
        try:
            with transaction.atomic():
                return Dispute.objects.create(rating=rating, comment=comment)
        except IntegrityError:
            raise dispute_refusal(rating) from None  # filed meanwhile: "disputed once already"


def rater_disputes(user: AbstractBaseUser) -> list[Dispute]:
    """The rater's disputes, newest first, with their ratings and pairs (their page shows them)."""
    return list(
        Dispute.objects.filter(rating__rater=user).select_related("rating__pair").order_by("-created_at", "-id")
    )


def profile_update(*, user: AbstractBaseUser, display_name: str, on_leaderboard: bool) -> RaterProfile:
    """The rater's leaderboard settings. Raises ValidationError for a name over 40 characters,
    the anonymous name, the rater's own user name, or another rater's pseudonym in any case
    (``profile_display_name_unique_ci``)."""
    display_name = display_name.strip()
    if len(display_name) > DISPLAY_NAME_MAX_CHARS:
        raise ValidationError(f"Up to {DISPLAY_NAME_MAX_CHARS} characters.", code="too_long")
    if display_name.casefold() == ANONYMOUS_NAME.casefold():
        raise ValidationError(
            "This is the name of raters without a pseudonym: leave the field empty for it.", code="taken"
        )
    if display_name and display_name.casefold() == user.get_username().casefold():
        # The pseudonym is shown on the leaderboard to every rater; the user name signs in.
        raise ValidationError("This is your user name: choose a pseudonym others cannot sign in with.", code="username")
    profile = progress.profile_for(user)
    taken = RaterProfile.objects.exclude(pk=profile.pk).filter(display_name__iexact=display_name)
    if display_name and taken.exists():
        raise ValidationError(PSEUDONYM_TAKEN, code="taken")
    profile.display_name = display_name
    profile.on_leaderboard = on_leaderboard
    try:
        with transaction.atomic():
            profile.save(update_fields=["display_name", "on_leaderboard"])
    except IntegrityError:  # chosen by another rater meanwhile
        raise ValidationError(PSEUDONYM_TAKEN, code="taken") from None
    return profile


def leaderboard(period: str = "all", limit: int = 20) -> list[dict]:
    """Top raters who chose to be shown: ``[{"rank", "name", "points", "level", "profile_id"}, ...]``.

    "all": the game score (reset when a qualification window fails). "week": points of the
    counted game ratings submitted in the last 7 days. The level is always the rater's level
    (from the game score), whichever points the board ranks by. Suspended raters are left out,
    and so is anyone who is not one of the study's raters (staff trying the game, withdrawn accounts).
    """
    if period not in LEADERBOARD_PERIODS:
        raise ValueError(f"period must be one of {sorted(LEADERBOARD_PERIODS)}, not {period!r}")
    shown = RaterProfile.objects.raters().filter(on_leaderboard=True).exclude(state=RaterState.SUSPENDED)
    if period == "all":
        rows = list(
            shown.filter(game_score__gt=0)
            .order_by("-game_score", "id")
            .values_list("id", "display_name", "game_score", "game_score")[:limit]
        )
    else:
        since = timezone.now() - LEADERBOARD_PERIODS[period]
        rows = list(
            shown.filter(
                game_ratings("user__ratings__"), user__ratings__excluded=False, user__ratings__submitted_at__gte=since
            )
            .annotate(points=Sum("user__ratings__points"))
            .filter(points__gt=0)
            .order_by("-points", "id")
            .values_list("id", "display_name", "points", "game_score")[:limit]
        )
    return [
        {
            "rank": rank,
            "name": name or ANONYMOUS_NAME,
            "points": points,
            "level": level_for(score),
            "profile_id": profile_id,
        }
        for rank, (profile_id, name, points, score) in enumerate(rows, start=1)
    ]


# Why game ratings were excluded, as the rater reads it on their page after "N ratings ...", by
# Rating.excluded_reason. A reason without an entry here is shown as it was stored.
EXCLUDED_WORDS = {
    WINDOW_FAILED_REASON: (
        f"from a qualification window that failed: your first {WINDOW_SIZE} game ratings after entering the "
        f"game scored fewer than the {WINDOW_NEEDED} points needed, so your game score went back to 0 and you "
        "went back to probation"
    ),
    DRIFT_REASON: (
        "from a quality check: some game pairs have ratings known from experts, and over the latest of them your "
        "ratings agreed with the experts' too rarely, so the game ratings you made since the first of those checks "
        "no longer count, your game score went back to 0 and you went back to probation"
    ),
}


def personal_stats(user: AbstractBaseUser) -> dict:
    """The rater's game record.

    ``ratings``: game ratings not excluded (control pairs' too: to the rater they are game pairs);
    ``exact_agreement``: share of them equal
    to the consensus shown at the time (None before any rating with a consensus);
    ``streak``: consecutive latest game ratings that scored 0 or more; ``score``, ``level``,
    ``next_level_at`` (None at the top level); ``excluded``: the rater's excluded game ratings
    (kept for the record, counted nowhere), ``[{"count", "reason", "words"}, ...]`` by reason, most
    first, and ``excluded_total``.
    """
    profile = progress.profile_for(user)
    ratings = Rating.objects.filter(game_ratings(), rater=user, excluded=False)
    count = ratings.count()
    with_reference = ratings.filter(reference__isnull=False)
    judged = with_reference.count()
    exact = with_reference.filter(value=F("reference")).count()
    streak = 0
    # Walk back from the latest rating until the first negative score: bounded by the streak.
    for points in ratings.order_by("-id").values_list("points", flat=True).iterator(chunk_size=200):
        if points < 0:
            break
        streak += 1
    excluded = [
        {"count": n, "reason": reason, "words": EXCLUDED_WORDS.get(reason, f"excluded: {reason or 'no reason given'}")}
        for reason, n in Rating.objects.filter(game_ratings(), rater=user, excluded=True)
        .values_list("excluded_reason")
        .annotate(n=Count("id"))
        .order_by("-n", "excluded_reason")
    ]
    return {
        "ratings": count,
        "excluded": excluded,
        "excluded_total": sum(row["count"] for row in excluded),
        "exact_agreement": exact / judged if judged else None,
        "streak": streak,
        "score": profile.game_score,
        "level": level_for(profile.game_score),
        "next_level_at": next_level_at(profile.game_score),
    }
