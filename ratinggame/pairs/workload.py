"""How much work an upload is, and whether it may be imported while its request waits.

An import checks every image by decoding all its pixels (``ratinggame.pairs.images``), so its
time grows with the pixels, not with the rows: 100 rows of 40-megapixel PNGs take far longer
than 1,000 rows of photos. The work is measured from the stored upload before the job is
queued, without decoding anything: the rows, the files, their bytes, and the pixels each image
header declares (Pillow reads the header only; loose files and zip members alike, a zip's
members read from the archive without unpacking it). An upload inside every limit is imported
during the request; any other, or one whose size cannot be told, goes to a worker and the
request answers 202 with the job to follow.
"""

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from PIL import Image as PILImage

from ratinggame.pairs.uploads import IMAGES, ZIPS


@dataclass(frozen=True)
class Workload:
    rows: int
    files: int
    bytes: int
    pixels: int


@dataclass(frozen=True)
class InlineLimits:
    """The most an import may hold and still run while its request waits (settings IMPORT_INLINE_MAX_*)."""

    rows: int
    files: int
    bytes: int
    pixels: int

    @classmethod
    def from_settings(cls, conf: dict) -> "InlineLimits":
        return cls(
            rows=conf["IMPORT_INLINE_MAX_ROWS"],
            files=conf["IMPORT_INLINE_MAX_FILES"],
            bytes=conf["IMPORT_INLINE_MAX_BYTES"],
            pixels=conf["IMPORT_INLINE_MAX_PIXELS"],
        )


def runs_inline(work: Workload, limits: InlineLimits) -> bool:
    """True when every measure of the work is within its limit."""
    return (
        work.rows <= limits.rows
        and work.files <= limits.files
        and work.bytes <= limits.bytes
        and work.pixels <= limits.pixels
    )


def header_pixels(stream: BinaryIO) -> int:
    """Width x height as the image header says (nothing decoded); 0 for a file Pillow cannot
    identify (the import's check refuses it with the reason)."""
    try:
        with PILImage.open(stream) as image:
            width, height = image.size
    except (OSError, SyntaxError, ValueError, EOFError, PILImage.DecompressionBombError):
        return 0
    return width * height


def _loose(folder: Path) -> Iterator[tuple[int, int]]:
    for path in (folder / IMAGES).rglob("*"):
        if path.is_file():
            with path.open("rb") as stream:
                yield path.stat().st_size, header_pixels(stream)


def _zipped(folder: Path) -> Iterator[tuple[int, int]]:
    for path in sorted((folder / ZIPS).glob("*")):
        with zipfile.ZipFile(path) as archive:
            for member in archive.infolist():
                if member.is_dir():
                    continue
                try:
                    with archive.open(member) as stream:
                        pixels = header_pixels(stream)
                except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError):
                    pixels = 0  # unpacking it fails in the job, which names the member
                yield member.file_size, pixels


def _files(folder: Path) -> Iterator[tuple[int, int]]:
    """(bytes, header pixels) of every image of the upload: loose files, then zip members."""
    yield from _loose(folder)
    yield from _zipped(folder)


def workload_measure(*, folder: Path, rows: int, limits: InlineLimits) -> Workload:
    """The work of the upload stored in ``folder`` (``ratinggame.pairs.uploads.upload_store``).

    Stops reading headers once the files alone are over the inline limit: the job is a
    worker's then, whatever the rest holds, and a request never reads 50,000 headers.
    """
    files = size = pixels = 0
    for file_bytes, file_pixels in _files(folder):
        files += 1
        size += file_bytes
        pixels += file_pixels
        if files > limits.files or size > limits.bytes or pixels > limits.pixels:
            break
    return Workload(rows=rows, files=files, bytes=size, pixels=pixels)
