"""Importing caption pairs from a manifest (CSV or JSONL) and a folder of images.

All-or-nothing by default: every row is checked first, and a single bad row means nothing
is written. With skip_invalid the good rows are imported and the bad ones reported.

Image files are stored under their content's name before the rows that use them are
committed (``ratinggame.pairs.storage``): an import that dies half-way leaves files no row
names, which nothing serves and ``media_orphans_delete`` removes; the next import of the same
content lands on the same names.
"""

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from ratinggame.models import CaptionPair, Pool
from ratinggame.pairs.images import CheckedImage, ImageRejected, check_image_bytes, read_limited
from ratinggame.pairs.services import image_store, pair_create, pairs_created
from ratinggame.pairs.validation import (
    MAX_DISPLAY_ORDER,
    PairInvalid,
    check_expert_fields,
    check_unicode,
    clean_caption,
    clean_display_order,
    clean_expert_rating,
    clean_explanation,
    clean_pool,
    clean_references,
    clean_source,
)

# (fraction done 0..1, what is being done): how an import tells a job page where it is.
Progress = Callable[[float, str], None]
# A file or folder name longer than this many bytes cannot exist on the usual file systems.
MAX_NAME_BYTES = 255

REQUIRED_COLUMNS = ("image", "caption")
OPTIONAL_COLUMNS = ("source", "references", "expert_rating", "explanation", "pool", "display_order")


class ManifestError(ValueError):
    """The manifest as a whole cannot be read (encoding, format, columns)."""


@dataclass(frozen=True)
class RowError:
    row: int
    reason: str

    def __str__(self) -> str:
        return f"row {self.row}: {self.reason}"


@dataclass
class ValidRow:
    row: int
    image_name: str
    checked: CheckedImage
    caption: str
    source: str
    pool: str
    references: list[str]
    expert_rating: int | None
    explanation: str
    display_order: int | None


@dataclass
class ImportReport:
    rows: int = 0
    valid_rows: int = 0
    pairs_created: int = 0
    images_created: int = 0
    images_reused: int = 0
    pair_ids: list[int] = field(default_factory=list)
    # Why the new game pairs wait for their model primes, when no worker gets them ("": queued).
    priming_note: str = ""
    errors: list[RowError] = field(default_factory=list)
    dry_run: bool = False
    written: bool = False


class ImportFailed(Exception):
    def __init__(self, report: ImportReport):
        self.report = report
        lines = "\n".join(f"  {error}" for error in report.errors)
        super().__init__(f"{len(report.errors)} invalid row(s); nothing was imported:\n{lines}")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ManifestError(
            f"the manifest is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} "
            "(save it as UTF-8 and try again)"
        ) from None


def read_manifest_rows(data: bytes, name: str = "") -> list[tuple[int, dict]]:
    """Parse manifest bytes into (row number, fields) in file order.

    Row numbers are the file's line numbers, so a person can find the row in an editor.
    """
    limit = settings.RATINGGAME["MAX_MANIFEST_BYTES"]
    if len(data) > limit:
        raise ManifestError(f"the manifest is {len(data):,} bytes, over the limit of {limit:,}")
    text = _decode(data)
    if not text.strip():
        raise ManifestError("the manifest is empty")
    lowered = name.lower()
    is_jsonl = lowered.endswith((".jsonl", ".ndjson", ".json")) or (
        not lowered.endswith(".csv") and text.lstrip().startswith("{")
    )
    rows = _read_jsonl(text) if is_jsonl else _read_csv(text)
    if not rows:
        raise ManifestError("the manifest has no data rows")
    return rows


def _check_columns(columns: set[str], where: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise ManifestError(f"{where}: missing required column(s): {', '.join(missing)}")
    unknown = sorted(columns - set(REQUIRED_COLUMNS) - set(OPTIONAL_COLUMNS))
    if unknown:
        known = ", ".join(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)
        raise ManifestError(f"{where}: unknown column(s): {', '.join(unknown)} (known: {known})")


def _read_csv(text: str) -> list[tuple[int, dict]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise ManifestError("the manifest is empty") from None
    except csv.Error as exc:
        raise ManifestError(f"line 1: not valid CSV ({exc})") from None
    columns = [c.strip().lower() for c in header]
    for index, column in enumerate(columns):
        if column in columns[:index]:
            first = header[columns.index(column)]
            raise ManifestError(f"line 1: the column {column!r} appears twice (as {first!r} and {header[index]!r})")
    _check_columns(set(columns), "header (line 1)")
    rows = []
    try:
        for values in reader:
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(columns):
                rows.append((line, {"__error__": f"has {len(values)} fields, the header has {len(columns)}"}))
                continue
            rows.append((line, dict(zip(columns, values, strict=True))))
    except csv.Error as exc:
        raise ManifestError(f"line {reader.line_num}: not valid CSV ({exc})") from None
    return rows


class _DuplicateColumn(ValueError):
    pass


def _columns_once(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's members with their names as columns (trimmed, lower case), each once."""
    record: dict = {}
    spelled: dict[str, str] = {}
    for key, value in pairs:
        column = key.strip().lower()
        if column in record:
            raise _DuplicateColumn(f"the column {column!r} appears twice (as {spelled[column]!r} and {key!r})")
        record[column] = value
        spelled[column] = key
    return record


def _read_jsonl(text: str) -> list[tuple[int, dict]]:
    rows = []
    # JSON Lines ends a line at "\n" only: U+2028, U+0085 and other characters that
    # str.splitlines() splits on are valid inside a JSON string.
    for line_number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_columns_once)
        except json.JSONDecodeError as exc:
            rows.append((line_number, {"__error__": f"not valid JSON ({exc.msg})"}))
            continue
        except _DuplicateColumn as exc:
            raise ManifestError(f"line {line_number}: {exc}") from None
        if not isinstance(record, dict):
            rows.append((line_number, {"__error__": "each line must be a JSON object"}))
            continue
        _check_columns(set(record), f"line {line_number}")
        rows.append((line_number, record))
    return rows


def _resolved(path: Path) -> Path:
    """``path`` with its symbolic links followed; a symbolic link loop raises OSError, like a name too long."""
    try:
        return path.resolve()
    except RuntimeError as exc:  # Python 3.11 reports a symbolic link loop this way
        raise OSError(str(exc)) from None


class _ImageReader:
    """Reads and checks each image file once, however many rows name it."""

    def __init__(self, folder: Path, where: str = "the images folder"):
        self.where = where  # the images as the researcher knows them, for the errors
        try:
            self.folder = _resolved(folder)
        except OSError as exc:
            raise ManifestError(f"images folder {folder} cannot be read ({exc})") from None
        self.cache: dict[str, CheckedImage | ImageRejected] = {}

    def get(self, name: object) -> CheckedImage:
        if name is None or (isinstance(name, str) and not name.strip()):
            raise ImageRejected("the image column is empty")
        if not isinstance(name, str):
            raise ImageRejected(f"the image column must be a file name, got {type(name).__name__} {name!r:.60}")
        try:
            check_unicode(name, "image file name")
        except PairInvalid as exc:
            raise ImageRejected(str(exc)) from None
        name = name.strip()
        if any(len(part.encode()) > MAX_NAME_BYTES for part in Path(name).parts):
            raise ImageRejected(f"image file name {name[:60]!r}... is longer than {MAX_NAME_BYTES} bytes")
        if name not in self.cache:
            self.cache[name] = self._load(name)
        result = self.cache[name]
        if isinstance(result, ImageRejected):
            raise result
        return result

    def _load(self, name: str) -> CheckedImage | ImageRejected:
        try:
            # Only plain names inside the images folder: no absolute paths, no '..'.
            path = _resolved(self.folder / name)
            if Path(name).is_absolute() or self.folder not in path.parents:
                return ImageRejected(f"image {name!r} must be a file name inside {self.where}")
            if not path.is_file():
                return ImageRejected(f"image file {name!r} not found in {self.where}")
            with path.open("rb") as handle:
                return check_image_bytes(read_limited(handle))
        except PermissionError:
            return ImageRejected(f"image file {name!r} cannot be read (permission denied)")
        except ImageRejected as exc:
            return ImageRejected(f"image {name!r}: {exc}")
        except OSError as exc:  # a symbolic link loop, a name the file system refuses, ...
            return ImageRejected(f"image file {name!r} cannot be read ({exc.strerror or exc})")


def validate_rows(
    rows: list[tuple[int, dict]], images: _ImageReader, default_pool: str, progress: Progress | None = None
) -> tuple[list, list]:
    valid: list[ValidRow] = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str], int] = {}
    for number, (line, record) in enumerate(rows, start=1):
        if progress is not None:
            progress(number / len(rows), f"Checking the rows ({number:,} of {len(rows):,})")
        if "__error__" in record:
            errors.append(RowError(line, record["__error__"]))
            continue
        try:
            caption = clean_caption(record.get("caption"))
            source = clean_source(record.get("source"))
            pool = clean_pool(record.get("pool") or default_pool)
            expert_rating = clean_expert_rating(record.get("expert_rating"))
            explanation = clean_explanation(record.get("explanation"))
            check_expert_fields(pool, expert_rating, explanation)
            references = clean_references(record.get("references"))
            display_order = clean_display_order(record.get("display_order"))
            checked = images.get(record.get("image"))
        except (PairInvalid, ImageRejected) as exc:
            errors.append(RowError(line, str(exc)))
            continue
        key = (checked.sha256, caption)
        if key in seen:
            errors.append(RowError(line, f"duplicate pair: same image and caption as row {seen[key]}"))
            continue
        seen[key] = line
        valid.append(
            ValidRow(
                line,
                str(record["image"]).strip(),
                checked,
                caption,
                source,
                pool,
                references,
                expert_rating,
                explanation,
                display_order,
            )
        )
    # Pairs already in the database (same image content and caption).
    existing = set(
        CaptionPair.objects.filter(
            image__sha256__in={r.checked.sha256 for r in valid}, caption__in={r.caption for r in valid}
        ).values_list("image__sha256", "caption", "id")
    )
    existing_ids = {(sha, caption): pk for sha, caption, pk in existing}
    still_valid = []
    for row in valid:
        pk = existing_ids.get((row.checked.sha256, row.caption))
        if pk is not None:
            errors.append(RowError(row.row, f"duplicate pair: already in the database as pair #{pk}"))
        else:
            still_valid.append(row)
    past_the_end = _unnumbered_past_the_end(still_valid)
    refused = {error.row for error in past_the_end}
    errors.extend(past_the_end)
    errors.sort(key=lambda e: e.row)
    return [row for row in still_valid if row.row not in refused], errors


def _unnumbered_past_the_end(valid: list[ValidRow]) -> list[RowError]:
    """Rows without display_order are numbered after the pool's last pair: none past the range."""
    errors = []
    last = _last_display_orders()
    for row in valid:
        if row.display_order is None:
            last[row.pool] += 1
            if last[row.pool] > MAX_DISPLAY_ORDER:
                errors.append(RowError(row.row, f"no display_order is left after {MAX_DISPLAY_ORDER:,}: give one"))
    return errors


def _last_display_orders() -> dict[str, int]:
    return {p: CaptionPair.objects.filter(pool=p).aggregate(m=Max("display_order"))["m"] or 0 for p in Pool}


def import_manifest(
    *,
    manifest: Path,
    images_dir: Path,
    pool: str = Pool.GAME,
    dry_run: bool = False,
    skip_invalid: bool = False,
    progress: Progress | None = None,
    on_written: Callable[[ImportReport], None] | None = None,
    images_named: str = "the images folder",
) -> ImportReport:
    """Check every row, then write all of them in one transaction (or none).

    ``progress`` hears where the import is: checking the rows (the first 80%), then that it
    writes (the writing itself is one transaction: a progress row updated inside it would be
    seen by nobody before the commit). ``on_written`` is called with the report inside that
    transaction, after the last row: what it writes is committed with the rows or not at all.
    ``images_named``: how the errors name where the images are (a browser upload has no folder).
    """
    pool = clean_pool(pool)
    if not images_dir.is_dir():
        raise ManifestError(f"images folder {images_dir} does not exist")
    try:
        data = manifest.read_bytes()
    except OSError as exc:
        raise ManifestError(f"cannot read the manifest {manifest}: {exc.strerror}") from None
    rows = read_manifest_rows(data, manifest.name)
    checking = (lambda fraction, message: progress(0.8 * fraction, message)) if progress else None
    valid, errors = validate_rows(rows, _ImageReader(images_dir, images_named), pool, checking)
    report = ImportReport(rows=len(rows), valid_rows=len(valid), errors=errors, dry_run=dry_run)
    if errors and not skip_invalid:
        raise ImportFailed(report)
    if dry_run:
        return report
    if progress is not None:
        progress(0.8, f"Writing {len(valid):,} pairs")
    with transaction.atomic():
        _write_rows(valid, report, source=f"imported from {manifest.name}")
        report.written = True
        if on_written is not None:
            on_written(report)
    return report


def _write_rows(valid: list[ValidRow], report: ImportReport, source: str) -> None:
    next_order = {pool: last + 1 for pool, last in _last_display_orders().items()}
    for row in valid:
        image, created = image_store(checked=row.checked, original_name=row.image_name, source=source)
        report.images_created += created
        report.images_reused += not created
        order = row.display_order
        if order is None:
            order = next_order[row.pool]
            next_order[row.pool] += 1
        pair = pair_create(
            image=image,
            caption=row.caption,
            source=row.source,
            pool=row.pool,
            references=row.references,
            expert_rating=row.expert_rating,
            explanation=row.explanation,
            display_order=order,
        )
        report.pair_ids.append(pair.pk)
    report.pairs_created = len(report.pair_ids)
    report.priming_note = pairs_created(report.pair_ids)
