"""Writes for images and pairs (small services; the importer and admin call these)."""

import logging

from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from ratinggame.images import CheckedImage
from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus

log = logging.getLogger(__name__)


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
    image.file.save(f"upload.{checked.extension}", ContentFile(checked.data), save=False)
    try:
        with transaction.atomic():
            image.save()
    except IntegrityError:
        # Another writer stored the same content first: use theirs, drop our file copy.
        image.file.delete(save=False)
        return Image.objects.get(sha256=checked.sha256), False
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
        priming_status=PrimingStatus.PENDING if pool == Pool.GAME else PrimingStatus.NOT_NEEDED,
    )
    return pair


def pairs_created(pair_ids: list[int]) -> None:
    """Hook run after new pairs are committed: game pairs are queued for model priming."""
    from scoring.priming import schedule_priming

    transaction.on_commit(lambda: schedule_priming(pair_ids))
