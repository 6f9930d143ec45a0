"""Reading an export bundle in the export tests: what the files hold, checked against the database."""

import csv
import json
from collections import Counter
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

from django.db.models import Count, Q

from ratinggame.models import CaptionPair, Pool, Rating
from scoring.export.bundle import CALIBRATED_DIGITS, PAIR_COLUMNS, RATING_COLUMNS, RAW_SCORE_DIGITS, export_build
from scoring.export.formats import iso_utc

ALL_FORMATS = ("csv", "jsonl", "parquet")


def build(out: Path, **options) -> dict:
    options.setdefault("formats", ALL_FORMATS)
    return export_build(out_dir=out, **options)


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def valid_game_ratings():
    return Rating.objects.filter(stage=Pool.GAME, pair__pool=Pool.GAME, excluded=False)


def db_exported_pair_ids(min_ratings: int = 3) -> set[int]:
    """Independent of the exporter: game pairs with enough non-excluded game ratings, by aggregate query."""
    valid = Q(ratings__excluded=False, ratings__stage=Pool.GAME)
    pairs = CaptionPair.objects.game().annotate(n=Count("ratings", filter=valid)).filter(n__gte=min_ratings)
    return set(pairs.values_list("id", flat=True))


class TagCounter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = Counter()

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1


def as_text_format(row: dict) -> dict:
    """A Parquet row as the text formats write it: the documented decimals, ISO-8601 UTC times."""
    digits = {column[0]: column[2] for column in (*PAIR_COLUMNS, *RATING_COLUMNS) if len(column) > 2}
    converted = {}
    for key, value in row.items():
        places = digits.get(key) or (RAW_SCORE_DIGITS if key.endswith("__raw") else CALIBRATED_DIGITS)
        if isinstance(value, datetime):
            value = iso_utc(value)
        elif isinstance(value, float):
            value = round(value, places)
        converted[key] = value
    return converted
