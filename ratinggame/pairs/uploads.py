"""A manifest upload (manifest file + image files, or zips of images) laid out for the importer.

``upload_store`` writes the upload into an import job's folder while the request is open:
the manifest, each loose image under ``images/``, each zip under ``zips/`` once its table of
contents passed every check. ``zips_unpack`` unpacks the zips into ``images/`` later, in the
job (a large upload is unpacked by a worker, not while the request waits).

No name a client sends becomes a path unchecked: loose files keep only their base name, and
zip members are written only when every part of their path is a plain name (no absolute
paths, no '..', no drive letters, at most 255 bytes). One upload is one tree of names: a name
used twice, or used both as a file and as a folder (a file ``a`` beside ``a/b.png``), is
refused. An encrypted member is refused (the importer has no password). The member count and
the unpacked size are bounded for the whole upload, however many zips it holds (a zip bomb
split in several zips is still one bomb).
"""

import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from ratinggame.pairs.importing import MAX_NAME_BYTES, ManifestError

IMAGES = "images"
ZIPS = "zips"
_CHUNK = 1024 * 1024
_PLAIN_PART = re.compile(r"[^\x00-\x1f/\\:]+")
# Archive clutter that no manifest names.
_SKIPPED_PREFIXES = ("__MACOSX/",)
_ENCRYPTED = 0x1  # general purpose bit flag 0 of a zip member


class UploadRefused(ManifestError):
    """The uploaded files cannot be laid out for import; the message says why."""


def _plain_parts(name: str) -> list[str]:
    """The parts of a relative path, each a plain file or folder name; else UploadRefused."""
    path = PurePosixPath(name)
    parts = list(path.parts)
    if not parts or path.is_absolute() or any(p in ("", ".", "..") or not _PLAIN_PART.fullmatch(p) for p in parts):
        raise UploadRefused(f"{name[:300]!r} is not a plain relative file name")
    if any(len(part.encode()) > MAX_NAME_BYTES for part in parts):
        raise UploadRefused(f"{name[:60]!r}... has a name longer than {MAX_NAME_BYTES} bytes")
    return parts


@dataclass
class _Tree:
    """The names of one upload, and what its zips may still unpack (bounded per upload)."""

    members_left: int
    bytes_left: int
    files: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)

    def claim(self, parts: list[str]) -> None:
        path = "/".join(parts)
        prefixes = ["/".join(parts[:depth]) for depth in range(1, len(parts))]
        for prefix in prefixes:
            if prefix in self.files:
                raise UploadRefused(f"{prefix!r} is a file in the upload and also the folder of {path!r}")
        if path in self.files:
            raise UploadRefused(f"the image file {path!r} is in the upload twice")
        if path in self.folders:
            raise UploadRefused(f"{path!r} is a file in the upload and also a folder of other files")
        self.files.add(path)
        self.folders.update(prefixes)

    def spend(self, archive_name: str, members: int, unpacked: int) -> None:
        limits = settings.RATINGGAME
        self.members_left -= members
        self.bytes_left -= unpacked
        if self.members_left < 0:
            raise UploadRefused(
                f"with {archive_name!r} the upload holds over {limits['MAX_ZIP_MEMBERS']:,} files in zips, the limit"
            )
        if self.bytes_left < 0:
            raise UploadRefused(
                f"with {archive_name!r} the upload's zips unpack to over {limits['MAX_UNZIPPED_BYTES']:,} bytes, "
                "the limit"
            )


def _safe_name(name: str) -> str:
    """A client's file name reduced to safe characters (a manifest's extension tells CSV from JSONL)."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name or "").name).lstrip(".")
    return base[:100] or "manifest.csv"


def _write(source, target: Path) -> None:
    with target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)


def _members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    return [m for m in archive.infolist() if not m.is_dir() and not m.filename.startswith(_SKIPPED_PREFIXES)]


def _zip_check(upload: UploadedFile, tree: _Tree) -> None:
    """Read the zip's table of contents (nothing is unpacked) and claim its members' names."""
    upload.seek(0)
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError, EOFError):
        raise UploadRefused(f"{upload.name!r} is not a valid zip file") from None
    with archive:
        members = _members(archive)
        # Declared sizes bound what is unpacked: zipfile never reads past a member's file_size.
        tree.spend(upload.name, len(members), sum(m.file_size for m in members))
        for member in members:
            if member.flag_bits & _ENCRYPTED:
                raise UploadRefused(f"{member.filename!r} in {upload.name!r} is encrypted; upload an unencrypted zip")
            tree.claim(_plain_parts(member.filename))


def upload_store(*, folder: Path, manifest: UploadedFile, files: Iterable[UploadedFile]) -> Path:
    """Write the upload into ``folder`` (which must not exist yet); returns the manifest's path.

    Raises UploadRefused, naming the file, for anything that cannot be laid out.
    """
    limits = settings.RATINGGAME
    tree = _Tree(members_left=limits["MAX_ZIP_MEMBERS"], bytes_left=limits["MAX_UNZIPPED_BYTES"])
    (folder / IMAGES).mkdir(parents=True)
    (folder / ZIPS).mkdir()
    manifest_path = folder / _safe_name(manifest.name)
    manifest.seek(0)
    _write(manifest, manifest_path)
    for number, upload in enumerate(files, start=1):
        if (upload.name or "").lower().endswith(".zip"):
            _zip_check(upload, tree)
            target = folder / ZIPS / f"{number:05d}-{_safe_name(upload.name)}"
        else:
            name = Path(upload.name or "").name
            tree.claim(_plain_parts(name))
            target = folder / IMAGES / name
        upload.seek(0)
        _write(upload, target)
    return manifest_path


def zips_unpack(folder: Path) -> None:
    """Unpack the zips ``upload_store`` kept into the images folder (their names were checked then).

    Raises UploadRefused for a member whose data is damaged.
    """
    images = folder / IMAGES
    for path in sorted((folder / ZIPS).iterdir()):
        uploaded_as = path.name.split("-", 1)[1]
        with zipfile.ZipFile(path) as archive:
            for member in _members(archive):
                target = images.joinpath(*_plain_parts(member.filename))
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with archive.open(member) as source:
                        _write(source, target)
                except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as error:
                    raise UploadRefused(
                        f"{member.filename!r} in {uploaded_as!r} cannot be unpacked ({error})"
                    ) from None
