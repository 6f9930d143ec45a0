"""The bundle's Hugging Face dataset card: README.md with a YAML header. No Django import.

``datasets.load_dataset(<bundle folder>, "pairs")`` (or ``"ratings"``) reads the tables named by
the header's ``configs``, one file per split (Hugging Face's "Dataset card" and "Manual
configuration" documentation). Without it, the loader globs every table of the folder into one
dataset and fails ("column names don't match": pairs and ratings mixed). The split files are
written once, in the card's format (Parquet when the export has it: typed columns), under
``data/``; the full tables stay at the top of the bundle.

The header is written here rather than by a YAML library: every scalar is a JSON string, which
YAML reads as a double-quoted scalar, so captions of sources or odd licence text cannot break it.
"""

import json
from collections.abc import Mapping, Sequence

from scoring.splits import SPLITS

CARD_FILE = "README.md"
DATA_FOLDER = "data"
CONFIGS = ("pairs", "ratings")
UNKNOWN_LICENSE = "unknown"
# Hugging Face's size buckets, by number of examples (pairs).
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def card_format(formats: Sequence[str]) -> str:
    """The format of the split files: Parquet when exported (typed timestamps), else the first one."""
    return "parquet" if "parquet" in formats else formats[0]


def split_file(config: str, split: str, fmt: str) -> str:
    """Path of one split's table inside the bundle, e.g. data/pairs-train.parquet."""
    return f"{DATA_FOLDER}/{config}-{split}.{fmt}"


def size_category(pairs: int) -> str:
    for limit, name in _SIZES:
        if pairs < limit:
            return name
    return "n>1M"


def card_front_matter(*, pretty_name: str, license_id: str, pairs: int, fmt: str) -> str:
    """The YAML header of README.md, between its two "---" lines (inclusive)."""
    lines = [
        "---",
        f"pretty_name: {json.dumps(pretty_name)}",
        f"license: {json.dumps(license_id or UNKNOWN_LICENSE)}",
        "language:",
        "- en",
        "task_categories:",
        "- image-to-text",
        "tags:",
        "- image-captioning",
        "- caption-evaluation",
        "- human-ratings",
        "size_categories:",
        f"- {json.dumps(size_category(pairs))}",
        "configs:",
    ]
    for config in CONFIGS:
        lines.append(f"- config_name: {config}")
        if config == CONFIGS[0]:
            lines.append("  default: true")
        lines.append("  data_files:")
        for split in SPLITS:
            lines += [f"  - split: {split}", f"    path: {json.dumps(split_file(config, split, fmt))}"]
    lines.append("---")
    return "\n".join(lines) + "\n"


def rounding_groups(columns: Sequence[tuple]) -> list[tuple[int, list[str]]]:
    """The float columns the text formats round (``scoring.export.formats``), grouped by their
    number of decimals, fewest first: [(3, ["seconds_spent"]), (4, ["mean", ...]), ...]."""
    groups: dict[int, list[str]] = {}
    for column in columns:
        if len(column) > 2 and column[1] == "float" and column[0] not in groups.get(column[2], []):
            groups.setdefault(column[2], []).append(column[0])
    return sorted(groups.items())


def rows_by_split(rows: Sequence[tuple], split_of: Mapping[int, str]) -> dict[str, list[tuple]]:
    """Rows whose first value is a pair id, grouped by that pair's split (every split present)."""
    grouped: dict[str, list[tuple]] = {split: [] for split in SPLITS}
    for row in rows:
        grouped[split_of[row[0]]].append(row)
    return grouped
