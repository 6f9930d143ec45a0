"""Image files as the picture a rater's browser shows: for the models and the display copies alike.

A pair's image reaches a rater as a browser shows it (EXIF orientation applied, transparency
over the page, 8 bits per channel), so the priming models (``scoring.priming``) score that
picture and the display copies (``ratinggame.pairs.derivatives``) are made from it:
``image_to_rgb`` is that picture. ``StoredImage`` carries an image file's bytes, read on demand:
a scorer opens them with Pillow, or decodes them on its device (``scoring.priming.images``).

Pure: Pillow and numpy, no Django and no torch, so the web process and a GPU worker share it.
"""

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from PIL import Image as PILImage
from PIL import ImageCms, ImageOps

# Image modes holding more than 8 bits per sample (see image_to_rgb).
HIGH_DEPTH_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")
# Modes with an alpha channel (or palette transparency, checked separately).
ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
EXIF_ORIENTATION = 0x0112


class Storage(Protocol):
    """Where image files are kept (a Django storage: ``Image.file.storage``)."""

    def open(self, name: str, mode: str = "rb"): ...


class StoredFile(Protocol):
    """A stored file (a Django ``FieldFile``: ``pair.image.file``)."""

    name: str
    storage: Storage


@dataclass(frozen=True)
class StoredImage:
    """An image file's bytes, read on demand; calling it opens them with Pillow."""

    read: Callable[[], bytes]

    def __call__(self) -> PILImage.Image:
        return open_image(self.read())


def open_image(data: bytes) -> PILImage.Image:
    image = PILImage.open(io.BytesIO(data))
    image.load()
    return image


def stored_image(storage: Storage, name: str) -> StoredImage:
    """The image file ``name`` of ``storage``. Each read opens the file anew, so threads may share it."""

    def read() -> bytes:
        with storage.open(name, "rb") as handle:
            return handle.read()

    return StoredImage(read=read)


def image_loader(file: StoredFile) -> StoredImage:
    """The stored image of a model's file field (``pair.image.file``)."""
    return stored_image(file.storage, file.name)


def _high_depth_to_l(image: PILImage.Image) -> PILImage.Image:
    """An 8-bit grey image ("L") from a 16-bit, 32-bit integer or float grey image.

    Pillow's own conversion of these modes to RGB clips every value above 255, which turns
    a 16-bit photograph almost white. Instead the samples are scaled to 0..255 by their
    full scale: 65535 for the 16-bit modes ("I;16*"), and for "I" (how Pillow may present
    a 16-bit PNG or TIFF) when every value lies in 0..65535; 1.0 for a float ("F") image
    whose values lie in 0..1. Anything else (negative or larger values) is stretched over
    its actual range, min to max.
    """
    values = np.asarray(image, dtype=np.float64)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    if image.mode.startswith("I;16") or (image.mode == "I" and low >= 0 and high <= 65535):
        low, scale = 0.0, 65535.0
    elif image.mode == "F" and low >= 0 and high <= 1:
        low, scale = 0.0, 1.0
    else:
        scale = high - low or 1.0
    scaled = np.nan_to_num((values - low) * (255.0 / scale), nan=0.0, posinf=255.0, neginf=0.0)
    return PILImage.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8), mode="L")


def image_to_rgb(image: PILImage.Image) -> PILImage.Image:
    """The 8-bit RGB picture a rater's browser shows for ``image``, as the model should see it.

    - EXIF orientation is applied (browsers rotate JPEGs by it);
    - 16-bit / 32-bit / float grey ("I;16", "I", "F"): scaled to 8 bits (``_high_depth_to_l``);
    - transparency ("RGBA", "LA", "PA", "P" with a transparent colour, premultiplied modes):
      composited on white, not dropped (dropping alpha reveals whatever colour the hidden
      pixels happen to hold, often black);
    - "CMYK": through the embedded ICC profile when there is one, else Pillow's conversion;
    - "1", "L", "P", "YCbCr", "LAB", "HSV" and the rest: Pillow's conversion to RGB.
    """
    if image.getexif().get(EXIF_ORIENTATION, 1) != 1:
        image = ImageOps.exif_transpose(image)
    mode = image.mode
    if mode == "RGB":
        return image
    if mode in HIGH_DEPTH_MODES:
        return _high_depth_to_l(image).convert("RGB")
    if mode in ALPHA_MODES or (mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = PILImage.new("RGBA", rgba.size, (255, 255, 255, 255))
        return PILImage.alpha_composite(white, rgba).convert("RGB")
    if mode == "CMYK" and image.info.get("icc_profile"):
        try:
            source = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
            return ImageCms.profileToProfile(image, source, ImageCms.createProfile("sRGB"), outputMode="RGB")
        except (ImageCms.PyCMSError, OSError, ValueError):
            pass  # a broken embedded profile: fall back to the plain conversion
    return image.convert("RGB")
