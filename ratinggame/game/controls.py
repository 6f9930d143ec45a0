"""Which control pair a rater meets next (SPEC 2.5), and their control ratings so far.

Control pairs are expert-rated pairs mixed into the game (``annotators.journey.control_due``
says which serve). A rater meets each control once before any repeats, then the one they saw
longest ago; among controls never seen, in an order of their own (drawn from their seed, as the
game pairs' order is). A control the rater skipped is never served to them again, and a control
of an image they have just seen comes only when no other is left. Controls hold no slots and have no
consensus: nothing to count (a control's row is locked by the rating's read of its assignment, as
every rated pair's is, and never written).
"""

from collections.abc import Sequence
from datetime import datetime

from annotators.journey import ControlResult, control_agreement, seeded_draw
from ratinggame.game.sql import IMAGE, PAIR, ImageRow, PairRow, control_candidates
from ratinggame.models import Pool


def control_pick(
    *, rater_id: int, seed: int, avoid_images: Sequence[int] = (), pool: str = Pool.CONTROL
) -> tuple[PairRow, ImageRow] | None:
    """The control pair to serve the rater now, with its image; None when there is none. The same
    order picks a study's attention check (``pool`` "attention", SPEC 7)."""
    pair_id_at, image_id_at = PAIR.names.index("id"), PAIR.names.index("image")
    # The order reads a few columns of each candidate as they come; only the one served is read whole.
    candidates = [
        row for row in control_candidates().fetchall(rater_id, rater_id, str(pool)) if not row[-1]
    ]  # not skipped
    if not candidates:
        return None
    others = [row for row in candidates if row[image_id_at] not in avoid_images] or candidates

    def order(row: tuple) -> tuple:
        last_served = row[-2]
        # Never served first (in the rater's own order), then the one served longest ago.
        return (last_served is not None, str(last_served or ""), seeded_draw(seed, row[pair_id_at], bound=2**31))

    row = min(others, key=order)
    return PAIR.read(row[: PAIR.width]), IMAGE.read(row[PAIR.width : PAIR.width + IMAGE.width])


def control_results(earlier: Sequence[tuple[datetime, int, int]], include: ControlResult) -> list[ControlResult]:
    """The rater's counted control ratings as the drift rule reads them, oldest first: ``earlier``
    (their latest since entering the game, (submitted_at, value, reference) newest first, as the
    rating's assignment read carries them: ``sql.rater_controls_read``), with ``include`` (the one
    being stored) last."""
    results = [
        ControlResult(submitted_at=submitted_at, agreement=control_agreement(value, reference))
        for submitted_at, value, reference in reversed(earlier)
    ]
    return [*results, include]
