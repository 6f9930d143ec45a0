"""The export's table formats: one writer per format, in the order the pages offer them.

A format is a class with a ``name`` (also the file suffix), a ``label`` and ``write(path,
columns, rows)``; ``FORMATS`` lists them and ``DEFAULT_FORMATS`` names the ones an export
writes when none are chosen. Adding a format is a change to this file only: a writer class
and its entry in ``WRITERS``. No Django import.

``columns`` holds (column name, type) or (column name, type, digits) with types "int",
"float", "str" and "datetime" (aware datetimes); every column may hold None, which is an empty
cell in CSV and null in JSON Lines and Parquet. Parquet keeps the types: datetimes are UTC
timestamps (milliseconds) and floats are full doubles. The text formats write datetimes as
ISO-8601 UTC strings and round a float column to its ``digits`` decimals when it names them (a
mean of ratings as 4.3333, not 4.333333333333333).

CSV is opened by spreadsheets, which run a cell that starts with ``=``, ``+``, ``-`` or ``@``
(or a tab or carriage return before one) as a formula: a caption ``=HYPERLINK("http://...")``
would become a link in every researcher's sheet. The CSV writer neutralises such text cells
with a leading apostrophe, as OWASP's "CSV Injection" page recommends (spreadsheets show the
text as written and hide the apostrophe); numbers are written as they are. JSON Lines and
Parquet keep every text exact.
"""

import csv
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from scoring.export.cells import spreadsheet_safe

Columns = Sequence[tuple]


def iso_utc(moment: datetime) -> str:
    """ISO-8601 in UTC with milliseconds and a Z: 2024-05-01T12:00:03.250Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text_rows(columns: Columns, rows: Sequence[Sequence]):
    """Rows as the text formats write them: datetimes as ISO strings, floats rounded."""
    converters = []
    for column in columns:
        kind, digits = column[1], column[2] if len(column) > 2 else None
        if kind == "datetime":
            converters.append(lambda value: None if value is None else iso_utc(value))
        elif kind == "float" and digits is not None:
            converters.append(lambda value, d=digits: None if value is None else round(value, d))
        else:
            converters.append(None)
    for row in rows:
        yield [value if convert is None else convert(value) for value, convert in zip(row, converters, strict=True)]


class TableWriter(Protocol):
    name: ClassVar[str]
    label: ClassVar[str]

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None: ...


class CsvWriter:
    name = "csv"
    label = "CSV (spreadsheets)"

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([column[0] for column in columns])
            writer.writerows([spreadsheet_safe(value) for value in row] for row in _text_rows(columns, rows))


class JsonLinesWriter:
    name = "jsonl"
    label = "JSON Lines"

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None:
        names = [column[0] for column in columns]
        with path.open("w", encoding="utf-8") as handle:
            for row in _text_rows(columns, rows):
                handle.write(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False) + "\n")


class ParquetWriter:
    name = "parquet"
    label = "Parquet (typed columns)"
    arrow_types: ClassVar[dict] = {
        "int": pa.int64(),
        "float": pa.float64(),
        "str": pa.string(),
        "datetime": pa.timestamp("ms", tz="UTC"),
    }

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None:
        schema = pa.schema([(column[0], self.arrow_types[column[1]]) for column in columns])
        data = {column[0]: [row[index] for row in rows] for index, column in enumerate(columns)}
        pq.write_table(pa.Table.from_pydict(data, schema=schema), path)


WRITERS: dict[str, TableWriter] = {writer.name: writer for writer in (CsvWriter(), JsonLinesWriter(), ParquetWriter())}
FORMATS = tuple(WRITERS)
DEFAULT_FORMATS = ("csv", "jsonl")


def formats_parse(text: str | Sequence[str]) -> tuple[str, ...]:
    """Formats from "csv,jsonl" or a list, checked, duplicates dropped, in the given order."""
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = tuple(dict.fromkeys(name.strip().lower() for name in names if name.strip()))
    unknown = [name for name in chosen if name not in WRITERS]
    if unknown:
        raise ValueError(f"unknown format(s) {', '.join(unknown)}: choose from {', '.join(FORMATS)}")
    if not chosen:
        raise ValueError(f"no format given: choose from {', '.join(FORMATS)}")
    return chosen


def table_write(
    folder: Path, name: str, columns: Columns, rows: Sequence[Sequence], formats: Sequence[str]
) -> list[Path]:
    """Write ``rows`` (tuples in ``columns`` order) as ``folder/name.<format>`` for each format."""
    written = []
    for fmt in formats_parse(formats):
        path = folder / f"{name}.{fmt}"
        WRITERS[fmt].write(path, columns, rows)
        written.append(path)
    return written
