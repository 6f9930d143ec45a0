"""Checking image files before they are stored: one place for every image rule.

Used by the manifest importer, the admin upload form and the API, so the same file gets
the same answer everywhere.
"""

import hashlib
import io
import warnings
from dataclasses import dataclass

from django.conf import settings
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

# Formats a browser can show; others (TIFF, PSD, ...) are refused with a clear message.
DISPLAYABLE_FORMATS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "GIF": "gif", "BMP": "bmp"}


class ImageRejected(ValueError):
    """The file is not an image this site can store; the message says why."""


@dataclass(frozen=True)
class CheckedImage:
    data: bytes
    sha256: str
    width: int
    height: int
    format: str
    extension: str
    mode: str


def _limits() -> tuple[int, int]:
    conf = settings.RATINGGAME
    return conf["MAX_IMAGE_BYTES"], conf["MAX_IMAGE_PIXELS"]


def check_image_bytes(data: bytes) -> CheckedImage:
    """Validate raw file content; raise ImageRejected with a reason a person understands."""
    max_bytes, max_pixels = _limits()
    if len(data) == 0:
        raise ImageRejected("the file is empty (0 bytes)")
    if len(data) > max_bytes:
        raise ImageRejected(f"the file is {len(data):,} bytes, over the limit of {max_bytes:,} bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            with PILImage.open(io.BytesIO(data)) as image:
                width, height = image.size
                # Check the header's size before decoding a single pixel.
                if width * height > max_pixels:
                    raise ImageRejected(
                        f"the image is too large: {width}x{height} = {width * height:,} pixels, "
                        f"over the limit of {max_pixels:,} pixels"
                    )
                fmt = image.format or ""
                if fmt not in DISPLAYABLE_FORMATS:
                    raise ImageRejected(
                        f"{fmt or 'this'} format cannot be shown in a browser; use JPEG, PNG, WebP, GIF or BMP"
                    )
                frames = getattr(image, "n_frames", 1)
                if frames > 1:
                    raise ImageRejected(f"animated images are not supported (this one has {frames} frames)")
                mode = image.mode
                image.load()  # decodes every pixel: truncated or corrupt data fails here
    except ImageRejected:
        raise
    except UnidentifiedImageError:
        raise ImageRejected("the file is not an image (or not a format Pillow can read)") from None
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
        raise ImageRejected(f"the image is too large to decode safely: {exc}") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRejected(f"the image is damaged or truncated ({exc})") from None
    return CheckedImage(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        width=width,
        height=height,
        format=fmt,
        extension=DISPLAYABLE_FORMATS[fmt],
        mode=mode,
    )


def read_limited(stream, limit: int | None = None) -> bytes:
    """Read at most limit+1 bytes so that a huge file is refused without reading it all."""
    limit = limit if limit is not None else _limits()[0]
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise ImageRejected(f"the file is over the limit of {limit:,} bytes")
    return data
