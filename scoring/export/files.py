"""Writing the export's tables (CSV, JSON Lines, Parquet), checksums and the zip. No Django import."""

import csv
import hashlib
import json
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FORMATS = ("csv", "jsonl", "parquet")
# Column types of a table: "int", "float", "str" (every column may hold None).
_ARROW_TYPES = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}
# Already-compressed files are stored as they are: deflating them costs time and saves nothing.
_STORED_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".parquet", ".zip"}


def formats_parse(text: str | Sequence[str]) -> tuple[str, ...]:
    """Formats from "csv,jsonl" or a list, checked, duplicates dropped, in the given order."""
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = tuple(dict.fromkeys(name.strip().lower() for name in names if name.strip()))
    unknown = [name for name in chosen if name not in FORMATS]
    if unknown:
        raise ValueError(f"unknown format(s) {', '.join(unknown)}: choose from {', '.join(FORMATS)}")
    if not chosen:
        raise ValueError(f"no format given: choose from {', '.join(FORMATS)}")
    return chosen


def table_write(
    folder: Path, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence], formats: Iterable[str]
) -> list[Path]:
    """Write ``rows`` (tuples in ``columns`` order) as ``folder/name.<format>`` for each format.

    ``columns`` holds (column name, type) with types "int", "float", "str". None is an empty
    cell in CSV, null in JSON Lines and Parquet.
    """
    names = [column for column, _ in columns]
    written = []
    for fmt in formats:
        path = folder / f"{name}.{fmt}"
        if fmt == "csv":
            with path.open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(names)
                writer.writerows(["" if value is None else value for value in row] for row in rows)
        elif fmt == "jsonl":
            with path.open("w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False) + "\n")
        elif fmt == "parquet":
            schema = pa.schema([(column, _ARROW_TYPES[kind]) for column, kind in columns])
            data = {column: [row[index] for row in rows] for index, column in enumerate(names)}
            pq.write_table(pa.Table.from_pydict(data, schema=schema), path)
        else:
            raise ValueError(f"unknown format {fmt!r}")
        written.append(path)
    return written


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
