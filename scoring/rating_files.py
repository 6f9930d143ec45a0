"""Reading external rating sets (CSV) for the agreement statistics (SPEC section 6).

Two layouts:

- ``long``: one rating per row, header ``pair_id,rating[,rater_id]`` (other columns ignored).
- ``wide``: one pair per row with its ratings in columns named ``rating``, ``ratings`` or
  ``rating_N``, as in the VICR sample (``ratings, rating_2 .. rating_7``, empty cells for the
  ratings a pair does not have). The pair is named by a ``pair_id`` or ``id`` column, else by
  ``image`` and ``caption`` (joined by a tab), else by its row number.

Errors raise `RatingFileError` naming the row: rows are counted from 1 at the top of the file
(the header is row 1 unless blank lines precede it), so row numbers match what a spreadsheet
shows; an encoding error names the line.
"""

import csv
import io
import re
from os import PathLike

MIN_RATING, MAX_RATING = 1, 5
_RATING_COLUMN = re.compile(r"ratings?(_\d+)?")
# Whole numbers, also as written by tools that store ratings as floats ("4.0").
_WHOLE_NUMBER = re.compile(r"[+-]?\d+(\.0*)?")


class RatingFileError(ValueError):
    """A rating file that cannot be read; the message names the row and the reason."""


def read_ratings_file(path: str | PathLike, format: str = "long") -> dict[str, list[int]]:
    """Ratings per pair from a CSV file, in file order: ``{pair_id: [rating, ...]}``.

    ``format`` is ``"long"`` or ``"wide"`` (see the module docstring). The file must be UTF-8
    (a byte-order mark is allowed). Raises RatingFileError for a file that is not UTF-8, lacks
    the needed columns, holds a rating that is not a whole number 1..5, a pair listed twice
    (wide), a rater rating one pair twice (long, with ``rater_id``), or a ``num_ratings``
    column that disagrees with the ratings found (wide).
    """
    if format not in ("long", "wide"):
        raise ValueError(f"format must be 'long' or 'wide', got {format!r}")
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise RatingFileError(f"line {line}: not UTF-8 text (byte {raw[error.start]:#04x})") from None
    rows = _rows(text)
    try:
        header_row, header = next(rows)
    except StopIteration:
        raise RatingFileError("row 1: the file is empty (no header)") from None
    header = [name.strip() for name in header]
    if format == "long":
        return _read_long(header, header_row, rows)
    return _read_wide(header, header_row, rows)


def _rows(text: str):
    """(row number, cells) for each non-blank row; the row number counts records, header = 1."""
    # strict: a stray or unclosed quote is an error, not silently glued into a cell.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    number = 0
    try:
        for cells in reader:
            number += 1
            if any(cell.strip() for cell in cells):
                yield number, cells
    except csv.Error as error:
        raise RatingFileError(f"row {number + 1}: malformed CSV ({error})") from None


def _read_long(header: list[str], header_row: int, rows) -> dict[str, list[int]]:
    columns = _find_columns(header, header_row, required=("pair_id", "rating"))
    rater_column = columns.get("rater_id")
    ratings: dict[str, list[int]] = {}
    seen: set[tuple[str, str]] = set()
    for number, cells in rows:
        pair_id = _cell(cells, columns["pair_id"], number, "pair_id")
        if not pair_id:
            raise RatingFileError(f"row {number}: empty pair_id")
        value = _rating(_cell(cells, columns["rating"], number, "rating"), number, "rating")
        if rater_column is not None:
            rater = _cell(cells, rater_column, number, "rater_id")
            if rater and (pair_id, rater) in seen:
                raise RatingFileError(f"row {number}: rater {rater!r} rated pair {pair_id!r} twice")
            seen.add((pair_id, rater))
        ratings.setdefault(pair_id, []).append(value)
    return ratings


def _read_wide(header: list[str], header_row: int, rows) -> dict[str, list[int]]:
    rating_columns = [(index, name) for index, name in enumerate(header) if _RATING_COLUMN.fullmatch(name.lower())]
    if not rating_columns:
        raise RatingFileError(f"row {header_row}: no rating columns (rating, ratings or rating_N) in header {header}")
    columns = _find_columns(header, header_row, required=())
    id_column = columns.get("pair_id", columns.get("id"))
    count_column = columns.get("num_ratings")
    ratings: dict[str, list[int]] = {}
    first_row: dict[str, int] = {}
    for number, cells in rows:
        if id_column is not None:
            pair_id = _cell(cells, id_column, number, header[id_column])
        elif "image" in columns and "caption" in columns:
            image = _cell(cells, columns["image"], number, "image")
            pair_id = image + "\t" + _cell(cells, columns["caption"], number, "caption")
        else:
            pair_id = str(number)
        if not pair_id.strip():
            raise RatingFileError(f"row {number}: empty pair id")
        if pair_id in first_row:
            raise RatingFileError(f"row {number}: pair {pair_id!r} is already on row {first_row[pair_id]}")
        values = []
        for index, name in rating_columns:
            cell = cells[index].strip() if index < len(cells) else ""
            if cell:
                values.append(_rating(cell, number, name))
        if count_column is not None:
            declared = _cell(cells, count_column, number, "num_ratings")
            if declared and declared != str(len(values)):
                raise RatingFileError(f"row {number}: num_ratings is {declared!r} but {len(values)} ratings are given")
        first_row[pair_id] = number
        ratings[pair_id] = values
    return ratings


def _find_columns(header: list[str], header_row: int, required: tuple[str, ...]) -> dict[str, int]:
    columns: dict[str, int] = {}
    for index, name in enumerate(header):
        columns.setdefault(name.lower(), index)
    missing = [name for name in required if name not in columns]
    if missing:
        raise RatingFileError(f"row {header_row}: missing column(s) {', '.join(missing)} in header {header}")
    return columns


def _cell(cells: list[str], index: int, number: int, name: str) -> str:
    if index >= len(cells):
        raise RatingFileError(f"row {number}: no value for column {name!r} (the row has {len(cells)} cells)")
    return cells[index].strip()


def _rating(cell: str, number: int, name: str) -> int:
    if not _WHOLE_NUMBER.fullmatch(cell):
        raise RatingFileError(f"row {number}: {name} = {cell!r} is not a whole number")
    value = int(float(cell))
    if not MIN_RATING <= value <= MAX_RATING:
        raise RatingFileError(f"row {number}: {name} = {cell!r} is out of range {MIN_RATING}-{MAX_RATING}")
    return value
