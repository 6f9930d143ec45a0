"""Display copies of pair images: made once with Pillow, served instead of the original.

An original can weigh megabytes (a 512-px PNG of 790 KB in the demo) while a phone shows it
342 px wide. Each stored image therefore gets WebP copies whose long side is at most 160, 480
and 1024 px (never larger than the original), with the EXIF orientation applied, so the
copies show the right way up even where a browser would not rotate the original. They are
stored beside the original (``images/ab/<sha256>-480.webp``), are served with the same
year-long cache headers (``ratinggame.pairs.media``), and are listed on
``Image.derivatives``; pages offer them through ``srcset`` (``display_image``) and link to the
original only on demand.

Made in the background once the transaction that stored an image commits
(``derivatives_request``, from ``ratinggame.pairs.services.image_store``; never for an import
that rolled back, so no copy outlives its original), and for images stored before, or while
the broker was down, by ``manage.py make_derivatives``. Until then, and for a file Pillow
cannot turn into copies, pages show the original: nothing is lost.
"""

import io
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.core.files.base import ContentFile
from PIL import Image as PILImage
from PIL import ImageOps

from ratinggame.background import dispatch
from ratinggame.models import Image
from ratinggame.pairs.storage import image_storage
from scoring.pictures import ALPHA_MODES, image_to_rgb

log = logging.getLogger(__name__)

# Long sides: 160 for thumbnails (admin lists, the guide's examples), 480 for a phone or a
# small slot, 1024 for a laptop's rating screen. Quality 80 WebP is visually lossless at
# these sizes and a fraction of PNG's bytes.
LONG_SIDES = (160, 480, 1024)
WEBP_QUALITY = 80


def derivatives_request(*, image: Image) -> None:
    """Make the display copies of a newly stored image after the current transaction commits."""
    dispatch("ratinggame.tasks.make_derivatives", image.pk)


def derivatives_make(*, image: Image) -> list[dict]:
    """Make (or make again) the display copies of ``image``; store and return their list.

    Each entry is ``{"name", "width", "height"}`` (storage name, oriented pixel size), smallest
    first. Returns [] and leaves the image as it was when Pillow cannot read the original.
    """
    try:
        with image.file.open("rb") as handle, PILImage.open(handle) as original:
            upright = _displayable(ImageOps.exif_transpose(original))
            made = [_store_copy(image, upright, long_side) for long_side in _long_sides(upright.size)]
    except (OSError, ValueError, SyntaxError, PILImage.DecompressionBombError) as exc:
        log.warning("No display copies for image %s: %s", image.pk, exc)
        return []
    image.derivatives = made
    Image.objects.filter(pk=image.pk).update(derivatives=made)
    return made


def _long_sides(size: tuple[int, int]) -> list[int]:
    # Never larger than the original: a 512-px original gets copies of 160, 480 and 512 px.
    longest = max(size)
    return sorted({min(side, longest) for side in LONG_SIDES})


def _displayable(picture: PILImage.Image) -> PILImage.Image:
    # Transparency stays (WebP keeps it; the page shows its own background through it). The rest
    # becomes the 8-bit RGB picture the models see too: 16-bit and float images scaled, not
    # clipped to white as Pillow's own conversion does, and CMYK through its profile.
    if picture.mode in ALPHA_MODES or "transparency" in picture.info:
        return picture.convert("RGBA")
    return image_to_rgb(picture)


def _store_copy(image: Image, upright: PILImage.Image, long_side: int) -> dict:
    copy = upright.copy()
    copy.thumbnail((long_side, long_side), PILImage.Resampling.LANCZOS)
    buffer = io.BytesIO()
    copy.save(buffer, format="WEBP", quality=WEBP_QUALITY, method=4)
    original = PurePosixPath(image.file.name)
    name = str(original.with_name(f"{original.stem}-{long_side}.webp"))
    # The originals' storage: written under a temporary name and renamed into place, so a copy
    # made again (``make_derivatives --force``, a task delivered twice) replaces the old one
    # whole, with no moment without it and never a second, suffixed name beside it.
    stored = image.file.storage.save(name, ContentFile(buffer.getvalue()))
    return {"name": stored, "width": copy.width, "height": copy.height}


@dataclass(frozen=True)
class DisplayImage:
    """What an ``<img>`` of a pair image needs: the best copy as ``src``, all copies as
    ``srcset``, the oriented size for ``width``/``height``, the smallest copy as ``thumb``."""

    src: str
    srcset: str
    width: int
    height: int
    thumb: str


def display_image(image) -> DisplayImage:
    """The display copies of ``image`` (an Image, or the game's ``ImageRow``) for a page (the
    original where there are none)."""
    copies = image.derivatives or []
    url = image_storage().url
    if not copies:
        original = url(getattr(image.file, "name", image.file))
        return DisplayImage(original, "", image.width, image.height, original)
    largest = copies[-1]
    return DisplayImage(
        src=url(largest["name"]),
        srcset=", ".join(f"{url(copy['name'])} {copy['width']}w" for copy in copies),
        width=largest["width"],
        height=largest["height"],
        thumb=url(copies[0]["name"]),
    )
