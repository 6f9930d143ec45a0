"""What the feedback of a rating says, in words: the feedback page's and the rating page's
in-place feedback (``ratinggame.play``) read it from here, from the feedback alone."""

from annotators import journey
from annotators.scale import SHORT
from ratinggame import game
from ratinggame.links import fixed_url, url_of


def feedback_panel_context(fb: "game.Feedback") -> dict:
    """What ``ratinggame/_feedback_panel.html`` shows of ``fb`` beyond the feedback itself."""
    window = fb.window
    return {
        "points_class": "good" if fb.points > 0 else "bad" if fb.points < 0 else "zero",
        "value_short": SHORT.get(fb.value, ""),
        "reference_short": SHORT.get(fb.reference, ""),
        # A failed window has the outcome box instead (its ratings no longer count).
        "show_window": window is not None and (window.open or fb.transition == "window_passed"),
        "continue_url": fixed_url("annotators:play"),
        "dispute_url": url_of("dispute", pk=fb.assignment_id),
    }


def outcome_for(fb: "game.Feedback", *, next_round: str = "", session_ended: bool = False) -> dict | None:
    """Title and text of the end of a stage (tutorial, probation round, qualification window);
    ``next_round`` says what the next probation round holds, after a failed one; ``session_ended``:
    the rater's study session has ended (SPEC 7), so a failed round was their last."""
    window = fb.window
    pairs = (fb.stage_max or 0) // 2
    tutorial_mark = journey.tutorial_pass_mark(pairs)
    probation_mark = journey.probation_pass_mark(pairs)
    texts = {
        "tutorial_passed": (
            "good",
            "Tutorial passed",
            f"You scored {fb.stage_total} of {fb.stage_max} points ({tutorial_mark} needed). "
            "Next: the rating game, scored against the other players' consensus.",
        ),
        "tutorial_failed": (
            "bad",
            "Tutorial finished: probation next",
            f"You scored {fb.stage_total} of {fb.stage_max} points, fewer than the {tutorial_mark} needed to go "
            f"straight to the game. Next is probation: {journey.PROBATION_SIZE} more pairs rated by experts, and "
            f"{journey.PROBATION_PASS_POINTS} of {journey.PROBATION_MAX_POINTS} points take you to the game.",
        ),
        "probation_passed": (
            "good",
            "Probation passed",
            f"You scored {fb.stage_total} of {fb.stage_max} points ({probation_mark} needed). Next: the rating game.",
        ),
        "probation_failed": (
            "bad",
            "Probation round finished: another round next",
            f"You scored {fb.stage_total} of {fb.stage_max} points, fewer than the {probation_mark} needed. "
            f"{next_round}",
        ),
    }
    if session_ended:
        texts["probation_failed"] = (
            "bad",
            "Probation round finished: your session ends here",
            f"You scored {fb.stage_total} of {fb.stage_max} points, fewer than the {probation_mark} needed. "
            "That was your last round in this study: the next page has your code. Thank you for your time.",
        )
    if window is not None:
        texts["window_passed"] = (
            "good",
            "Qualification passed",
            f"You scored {window.points} points in your first {window.size} game ratings "
            f"({window.needed} needed). Keep playing!",
        )
        texts["window_failed"] = (
            "bad",
            "Qualification failed: back to probation",
            f"You scored {window.points} points in your first {window.size} game ratings, fewer than the "
            f"{window.needed} needed. Your game score is reset to 0 and you go back to probation.",
        )
    texts["drift"] = (
        "bad",
        "Quality check: back to probation",
        "Some pairs in the game have ratings known from experts, to check that ratings stay careful. Over your "
        f"last {journey.drift_window()} of them, your ratings agreed with the experts' too rarely. Your game score "
        "is reset to 0, your game ratings since the first of those checks no longer count, and you go back to "
        "probation to practise with the experts' explanations.",
    )
    if session_ended and fb.transition not in texts:
        texts[fb.transition] = (
            "good",
            "Your session is complete",
            "Thank you: that was the end of your session in this study. The next page has your completion code.",
        )
    if fb.transition not in texts:
        return None
    tone, title, text = texts[fb.transition]
    return {"tone": tone, "title": title, "text": text}


def announcement(fb: "game.Feedback", outcome: dict | None, *, not_taken: str = "") -> str:
    """One sentence for screen readers, announced by feedback.js through an aria-live region;
    ``not_taken``: what the page says first when the rating sent was not taken (``not_taken_words``)."""
    points = f"{fb.points:+d} points" if fb.points else "0 points"
    if fb.stage == "game":
        if fb.first_rater:
            said = f"You rated {fb.value}. You are the first to rate this pair: 0 points."
        else:
            said = f"You rated {fb.value}. Consensus {fb.reference}. {points}."
        said += f" Game score {fb.stage_total}, level {fb.level}."
    else:
        said = f"You rated {fb.value}. Expert rating {fb.reference}. {points}."
        said += f" Total {fb.stage_total} of {fb.stage_max}."
    if outcome:
        said += f" {outcome['title']}."
    if not_taken:
        said = f"{not_taken} {said}"
    return said


def not_taken_words(not_taken: str, stored: int) -> str:
    """What the feedback page says when the pair was rated already, in another tab or window."""
    return (
        f"This pair was already rated (in another tab or window): your rating {not_taken} was not taken. "
        f"The rating stored is {stored}, and this page shows its result."
    )
