"""Which page a rater may open: the gates that every page of a journey step asks.

Pages of both apps use these (the rater's pages here, the rating screens in ratinggame.views),
so they live outside any page module. Where a rater may be is ``annotators.progress.current_step``.
"""

from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from annotators.journey import PLAYING_STEPS, Step
from annotators.progress import current_step
from annotators.scale import LEVELS
from ratinggame.models import CaptionPair, Pool, Rating

__all__ = ["PLAYING_STEPS", "STEP_STAGES", "guide_context", "step_gate", "step_url"]

# The rating screen of each playing step (URL kwarg "stage" of ratinggame's "rate" view).
STEP_STAGES = {Step.TUTORIAL: "tutorial", Step.PROBATION: "probation", Step.GAME: "game"}


def step_url(step: Step) -> str:
    """The page where a rater on ``step`` belongs."""
    if step == Step.CONSENT:
        return reverse("annotators:consent")
    if step == Step.SUSPENDED:
        return reverse("annotators:suspended")
    return reverse("rate", kwargs={"stage": STEP_STAGES[step]})


def step_gate(user, allowed: frozenset[Step] | set[Step]) -> HttpResponse | None:
    """None when ``user`` is on one of the ``allowed`` steps, else a redirect to their own step."""
    step = current_step(user)
    if step in allowed:
        return None
    return redirect(step_url(step))


def guide_context(user) -> dict:
    """What the Rating Guide (annotators/_guide.html) needs on every page that has it: the levels,
    and beside each one an example (None where there is none).

    The example of a level is the first guide pair (``Pool.GUIDE``, in display order) the experts
    rated at that level: the guide's own examples, there from the first tutorial pair on. A level
    without one falls back to the first tutorial pair rated at that level among those ``user`` has
    already rated. A tutorial pair the rater has not rated yet is never an example: in the tutorial
    the guide opens beside the pair being rated, and its expert rating would be the answer.
    """
    rated = Rating.objects.filter(rater=user, stage=Pool.TUTORIAL).values("pair_id")
    candidates = CaptionPair.objects.filter(
        Q(pool=Pool.GUIDE) | Q(pool=Pool.TUTORIAL, pk__in=rated), expert_rating__isnull=False
    )
    examples: dict[str, dict[int, CaptionPair]] = {Pool.GUIDE: {}, Pool.TUTORIAL: {}}
    for pair in candidates.select_related("image").order_by("display_order", "id"):
        examples[pair.pool].setdefault(pair.expert_rating, pair)
    chosen = {**examples[Pool.TUTORIAL], **examples[Pool.GUIDE]}
    return {"levels": LEVELS, "guide_levels": [(level, chosen.get(level.value)) for level in LEVELS]}
