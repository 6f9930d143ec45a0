"""The export's files: checksums, listing and the zip. No Django import. The tables are ``formats``."""

import hashlib
import zipfile
from pathlib import Path

# Already-compressed files are stored as they are: deflating them costs time and saves nothing.
_STORED_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".parquet", ".zip"}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_files(folder: Path) -> list[Path]:
    """Every file under ``folder``, as paths relative to it, sorted."""
    return sorted(path.relative_to(folder) for path in folder.rglob("*") if path.is_file())


def folder_zip(folder: Path, archive: Path, prefix: str) -> int:
    """Zip every file under ``folder`` into ``archive`` below the folder name ``prefix``; return the count."""
    files = folder_files(folder)
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for relative in files:
            kind = zipfile.ZIP_STORED if relative.suffix.lower() in _STORED_SUFFIXES else zipfile.ZIP_DEFLATED
            bundle.write(folder / relative, f"{prefix}/{relative.as_posix()}", compress_type=kind)
    return len(files)
