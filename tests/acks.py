"""What the crowd simulator was acknowledged against what the database holds, for the tests that
check that every acknowledged rating is stored (the simulation's and the fault tests')."""

from ratinggame.game.rating import shown_stage
from ratinggame.models import Rating


def stored_ratings() -> dict[int, tuple]:
    """As the raters were shown them: a control pair's rating is a game rating to its rater."""
    return {r.pk: (r.assignment_id, r.pair_id, shown_stage(r.stage), r.value) for r in Rating.objects.all()}


def acknowledged(acks) -> dict[int, tuple]:
    return {a.rating_id: (a.assignment_id, a.pair_id, a.stage, a.value) for a in acks}
