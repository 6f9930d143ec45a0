"""Writes for images and pairs (small services; the importer and admin call these)."""

import logging
import time
from datetime import timedelta
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from ratinggame.game.assignment import pair_rank_refresh
from ratinggame.models import IMAGES_DIR, Assignment, CaptionPair, Image, Pool, PrimingStatus, Rating
from ratinggame.pairs.derivatives import derivatives_request
from ratinggame.pairs.images import CheckedImage
from ratinggame.pairs.storage import image_storage
from scoring.priming.queue import priming_request

log = logging.getLogger(__name__)

# What a rater is shown of a pair and where it is served. Once a pair has a rating, or is on a
# rater's screen now, these stay as they are: its ratings belong to this content, and the
# validated dataset holds what was rated. Staff take such a pair out of play by withdrawing it
# (ratinggame.game.reports) and import the corrected content as a new pair.
PAIR_CONTENT_FIELDS = ("image", "caption", "references", "pool")


def image_store(*, checked: CheckedImage, original_name: str = "", source: str = "") -> tuple[Image, bool]:
    """Store an image once per content (sha256); return (image, created)."""
    existing = Image.objects.filter(sha256=checked.sha256).first()
    if existing is not None:
        return existing, False
    image = Image(
        sha256=checked.sha256,
        width=checked.width,
        height=checked.height,
        original_name=original_name[:255],
        source=source[:200],
    )
    # Written under its content's name before the row is committed (ratinggame.pairs.storage):
    # a row never names a missing file, and a file whose row never came is swept later.
    image.file.save(f"upload.{checked.extension}", ContentFile(checked.data), save=False)
    try:
        with transaction.atomic():
            image.save()
    except IntegrityError:
        # Another writer stored the same content first: its row names the same file.
        return Image.objects.get(sha256=checked.sha256), False
    derivatives_request(image=image)
    return image, True


def pair_create(
    *,
    image: Image,
    caption: str,
    source: str,
    pool: str,
    references: list[str] | None = None,
    expert_rating: int | None = None,
    explanation: str = "",
    display_order: int = 0,
) -> CaptionPair:
    pair = CaptionPair.objects.create(
        image=image,
        caption=caption,
        source=source,
        pool=pool,
        references=references or [],
        expert_rating=expert_rating,
        explanation=explanation,
        display_order=display_order,
        priming_status=priming_status_for_pool(pool),
    )
    return pair


def pair_content_frozen(*, pair_id: int, lock: bool = False) -> bool:
    """Whether the fields of ``PAIR_CONTENT_FIELDS`` of the pair can no longer change: a rater has
    rated it (at any stage; excluded ratings too, kept for audit) or holds it open now.

    With ``lock`` the pair's row is locked first (inside the caller's transaction), as the game
    locks it to rate it and its serving query skips it while locked, so no rating or serve
    lands between this answer and the caller's write.
    """
    if lock:
        list(CaptionPair.objects.select_for_update(no_key=True).filter(pk=pair_id).values_list("pk", flat=True))
    return Rating.objects.filter(pair_id=pair_id).exists() or Assignment.objects.open().filter(pair_id=pair_id).exists()


def priming_status_for_pool(pool: str) -> PrimingStatus:
    """A new pair's priming status: game pairs wait for their two model primes (SPEC section 4);
    tutorial and probation pairs are scored against their expert rating, and guide pairs are only shown:
    none of them is ever primed."""
    return PrimingStatus.PENDING if pool == Pool.GAME else PrimingStatus.NOT_NEEDED


def pairs_created(pair_ids: list[int]) -> str:
    """New or re-pooled pairs: the game pairs among them are queued for model priming after commit.

    Returns "" when a worker gets them, else a note that says why they wait and how to prime them.
    """
    return priming_request(pair_ids)


def pair_pool_changed(*, pair_id: int) -> str:
    """Bring the priming status in line after an edit moved a pair between pools.

    A pair moved into the game that was never primed becomes pending and is queued; a pair
    moved out of the game stops waiting for (or failing) priming. Primes already stored stay.
    Its place in the serving order follows its new pool (only game pairs are served).
    Returns the note of ``pairs_created`` ("" when nothing waits).
    """
    with transaction.atomic():
        pair = CaptionPair.objects.select_for_update(no_key=True).get(pk=pair_id)
        pair_rank_refresh(pair)
        pair.save(update_fields=["assign_rank"])
    note = ""
    into_game = CaptionPair.objects.filter(pk=pair_id, pool=Pool.GAME, priming_status=PrimingStatus.NOT_NEEDED)
    if into_game.update(priming_status=PrimingStatus.PENDING, priming_error="", priming_claimed_at=None):
        note = pairs_created([pair_id])
    waiting = [PrimingStatus.PENDING, PrimingStatus.FAILED]
    out_of_game = CaptionPair.objects.filter(pk=pair_id, priming_status__in=waiting).exclude(pool=Pool.GAME)
    out_of_game.update(priming_status=PrimingStatus.NOT_NEEDED, priming_error="")
    return note


def pairs_priming_retry(*, pair_ids: list[int]) -> tuple[int, str]:
    """Queue priming again for the failed and pending game pairs among ``pair_ids``.

    Failed pairs go back to pending (their error cleared) and every pending one is sent to
    the GPU queue after the transaction commits. Returns how many pairs were queued, and the
    note of ``pairs_created`` ("" when a worker gets them).
    """
    with transaction.atomic():
        CaptionPair.objects.filter(pk__in=pair_ids, pool=Pool.GAME, priming_status=PrimingStatus.FAILED).update(
            priming_status=PrimingStatus.PENDING, priming_error="", priming_claimed_at=None
        )
        ids = list(
            CaptionPair.objects.filter(
                pk__in=pair_ids, pool=Pool.GAME, priming_status=PrimingStatus.PENDING
            ).values_list("pk", flat=True)
        )
        note = pairs_created(ids)
    return len(ids), note


def media_orphans_delete(*, older_than: timedelta) -> list[str]:
    """Delete image files that no Image row names (its file or a display copy), and temporary
    ones, last written more than ``older_than`` ago (an import still running may commit its rows
    until then).

    Returns the names deleted (relative to MEDIA_ROOT). One query per folder of the store
    (``images/<2 hex>/``), so memory stays small however many images there are.
    """
    storage = image_storage()
    root = Path(storage.location) / IMAGES_DIR
    if not root.is_dir():
        return []
    cutoff = time.time() - older_than.total_seconds()
    deleted = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        prefix = f"{IMAGES_DIR}/{folder.name}/"
        named = set()
        for file, copies in Image.objects.filter(file__startswith=prefix).values_list("file", "derivatives"):
            named.add(file)
            named.update(copy.get("name") for copy in copies or [])
        for path in folder.iterdir():
            name = prefix + path.name
            if name in named or not path.is_file() or path.stat().st_mtime > cutoff:
                continue
            path.unlink(missing_ok=True)
            deleted.append(name)
            log.info("deleted image file %s: no image row names it", name)
    return deleted
