"""The export's table formats: one writer per format, in the order the pages offer them.

A format is a class with a ``name`` (also the file suffix), a ``label`` and ``write(path,
columns, rows)``; ``FORMATS`` lists them and ``DEFAULT_FORMATS`` names the ones an export
writes when none are chosen. Adding a format is a change to this file only: a writer class
and its entry in ``WRITERS``. No Django import.

``columns`` holds (column name, type) with types "int", "float", "str"; every column may hold
None, which is an empty cell in CSV and null in JSON Lines and Parquet.

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
from pathlib import Path
from typing import ClassVar, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

Columns = Sequence[tuple[str, str]]


class TableWriter(Protocol):
    name: ClassVar[str]
    label: ClassVar[str]

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None: ...


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: object) -> object:
    """A text cell a spreadsheet would run as a formula, made plain text (a leading apostrophe)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value


class CsvWriter:
    name = "csv"
    label = "CSV (spreadsheets)"

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([column for column, _ in columns])
            writer.writerows([spreadsheet_safe(value) for value in row] for row in rows)


class JsonLinesWriter:
    name = "jsonl"
    label = "JSON Lines"

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None:
        names = [column for column, _ in columns]
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False) + "\n")


class ParquetWriter:
    name = "parquet"
    label = "Parquet (typed columns)"
    arrow_types: ClassVar[dict] = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}

    def write(self, path: Path, columns: Columns, rows: Sequence[Sequence]) -> None:
        schema = pa.schema([(column, self.arrow_types[kind]) for column, kind in columns])
        data = {column: [row[index] for row in rows] for index, (column, _) in enumerate(columns)}
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
