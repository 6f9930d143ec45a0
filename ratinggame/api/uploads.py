"""A manifest upload (manifest file + image files, or zips of images) imported exactly like
``manage.py import_pairs``: the files are laid out in a private temporary folder and handed to
``ratinggame.pairs.importing.import_manifest``, which checks every row and writes all or nothing.

No name a client sends becomes a path unchecked: loose files keep only their base name, and
zip members are written under the temporary folder only when every part of their path is a
plain name (no absolute paths, no '..', no drive letters). A zip is refused before anything is
extracted when it holds too many members or unpacks to too many bytes (a zip bomb).
"""

import re
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from ratinggame.pairs.importing import ImportReport, ManifestError, import_manifest

_CHUNK = 1024 * 1024
_PLAIN_PART = re.compile(r"[^\x00-\x1f/\\:]{1,255}")
# Archive clutter that no manifest names.
_SKIPPED_PREFIXES = ("__MACOSX/",)


class UploadRefused(ManifestError):
    """The uploaded files cannot be laid out for import; the message says why."""


def _plain_parts(name: str) -> list[str]:
    """The parts of a relative path, each a plain file or folder name; else UploadRefused."""
    path = PurePosixPath(name)
    parts = list(path.parts)
    if not parts or path.is_absolute() or any(p in ("", ".", "..") or not _PLAIN_PART.fullmatch(p) for p in parts):
        raise UploadRefused(f"{name!r} is not a plain relative file name")
    return parts


def _manifest_name(name: str) -> str:
    """The manifest's base name reduced to safe characters; its extension tells CSV from JSONL."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name or "").name).lstrip(".")
    return base[:100] or "manifest.csv"


def _write(source, target: Path) -> None:
    with target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)


def _save_loose(upload: UploadedFile, folder: Path, taken: set[str]) -> None:
    name = Path(upload.name or "").name
    _plain_parts(name)
    if name in taken:
        raise UploadRefused(f"the image file {name!r} was uploaded twice")
    taken.add(name)
    upload.seek(0)
    _write(upload, folder / name)


def _unzip(upload: UploadedFile, folder: Path, taken: set[str]) -> None:
    limits = settings.RATINGGAME
    upload.seek(0)
    try:
        archive = zipfile.ZipFile(upload)
    except zipfile.BadZipFile:
        raise UploadRefused(f"{upload.name!r} is not a valid zip file") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir() and not m.filename.startswith(_SKIPPED_PREFIXES)]
        if len(members) > limits["MAX_ZIP_MEMBERS"]:
            raise UploadRefused(
                f"{upload.name!r} holds {len(members):,} files, over the limit of {limits['MAX_ZIP_MEMBERS']:,}"
            )
        # Declared sizes bound what is written: zipfile never reads past a member's file_size.
        unpacked = sum(m.file_size for m in members)
        if unpacked > limits["MAX_UNZIPPED_BYTES"]:
            raise UploadRefused(
                f"{upload.name!r} unpacks to {unpacked:,} bytes, over the limit of {limits['MAX_UNZIPPED_BYTES']:,}"
            )
        for member in members:
            parts = _plain_parts(member.filename)
            relative = "/".join(parts)
            if relative in taken:
                raise UploadRefused(f"the image file {relative!r} is in the upload twice")
            taken.add(relative)
            target = folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with archive.open(member) as source:
                    _write(source, target)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as error:
                raise UploadRefused(f"{member.filename!r} in {upload.name!r} cannot be unpacked ({error})") from None


def is_zip(upload: UploadedFile) -> bool:
    return (upload.name or "").lower().endswith(".zip")


def manifest_upload_import(
    *, manifest: UploadedFile, files: Iterable[UploadedFile], pool: str, dry_run: bool = False
) -> ImportReport:
    """Lay the upload out in a temporary folder and import it (all or nothing).

    Raises UploadRefused / ManifestError (the upload as a whole), ImportFailed (rows, each
    named), PairInvalid (the pool).
    """
    with tempfile.TemporaryDirectory(prefix="manifest-upload-") as temporary:
        root = Path(temporary)
        images = root / "images"
        images.mkdir()
        manifest_path = root / _manifest_name(manifest.name)
        manifest.seek(0)
        _write(manifest, manifest_path)
        taken: set[str] = set()
        for upload in files:
            if is_zip(upload):
                _unzip(upload, images, taken)
            else:
                _save_loose(upload, images, taken)
        return import_manifest(manifest=manifest_path, images_dir=images, pool=pool, dry_run=dry_run)
