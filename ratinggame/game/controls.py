"""Which control pair a rater meets next (SPEC 2.5), and their control ratings so far.

Control pairs are expert-rated pairs mixed into the game (``annotators.journey.control_due``
says which serve). A rater meets each control once before any repeats, then the one they saw
longest ago; among controls never seen, in an order of their own (drawn from their seed, as the
game pairs' order is). A control the rater skipped is never served to them again, and a control
of the image they just saw comes only when no other is left. Controls hold no slots and have no
consensus: nothing to count (a control's row is locked by the rating's read of its assignment, as
every rated pair's is, and never written).
"""

from datetime import datetime

from annotators.journey import ControlResult, control_agreement, drift_window, seeded_draw
from ratinggame.game.sql import IMAGE, PAIR, ImageRow, PairRow, control_candidates, latest_control_ratings


def control_pick(*, rater_id: int, seed: int, avoid_image: int | None = None) -> tuple[PairRow, ImageRow] | None:
    """The control pair to serve the rater now, with its image; None when there is none."""
    candidates = []
    for row in control_candidates().fetchall(rater_id, rater_id):
        pair, image = PAIR.read(row[: PAIR.width]), IMAGE.read(row[PAIR.width : PAIR.width + IMAGE.width])
        last_served, skipped = row[-2], row[-1]
        if not skipped:
            candidates.append((pair, image, last_served))
    if not candidates:
        return None
    others = [found for found in candidates if found[0].image_id != avoid_image] or candidates

    def order(found: tuple) -> tuple:
        pair, _, last_served = found
        # Never served first (in the rater's own order), then the one served longest ago.
        return (last_served is not None, str(last_served or ""), seeded_draw(seed, pair.id, bound=2**31))

    pair, image, _ = min(others, key=order)
    return pair, image


def control_results(*, rater_id: int, since: datetime, include: ControlResult) -> list[ControlResult]:
    """The rater's counted control ratings since ``since`` (their entry to the game), oldest first,
    as many as the drift rule reads, with ``include`` (the one being stored) last."""
    latest = latest_control_ratings().fetchall(rater_id, False, since, drift_window() - 1)
    results = [
        ControlResult(submitted_at=submitted_at, agreement=control_agreement(value, reference))
        for submitted_at, value, reference in reversed(latest)
    ]
    return [*results, include]
