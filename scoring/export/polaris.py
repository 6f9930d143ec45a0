"""The bundle's table for the caption-metric toolkits: the layout of Polaris and Nebula. No Django.

Polaris (Wada et al., "Polos", CVPR 2024; the Hugging Face dataset ``yuwd/Polaris``) is what
metric papers and CaptionEvalKit score a metric on. Its columns, and what this table puts in them:

- ``refs``, a list of strings (Arrow list<string>): the pair's reference captions (empty if none);
- ``cand``, a string: the caption rated;
- ``img``, a Hugging Face Image (Arrow struct<bytes, path>): the image's bytes when the export has
  images, else only its file name (the ``image_file`` of ``pairs``);
- ``human_score``, float32 on [0, 1]: (mean − 1) / 4 of the pair's counted ratings.

Polaris's ``human_score`` is one rater's five-point judgement mapped linearly onto [0, 1]
(1 → 0, 2 → 0.25, 3 → 0.5, 4 → 0.75, 5 → 1), and a pair appears once per rater. Here a row is a
pair, scored by the same map applied to the mean of its validated ratings: the scale's ends stay
at 0 and 1 and the pairs keep their order, so a toolkit's correlation compares a metric with the
pairs' consensus (the ``ratings`` table keeps every single rating). Nebula (Matsuda et al.,
"DENEB", ACCV 2024; ``Ka2ukiMatsuda/Nebula``) has the same information under other names
(``image``, ``mt`` for the caption, float64 scores); the toolkits read both layouts, and this
table takes Polaris's names and types.

Written as a dataset of its own inside the bundle, laid out as ``yuwd/Polaris`` is on the hub:
``polaris/README.md`` (a dataset card whose header names the features and one Parquet file per
split) and ``polaris/data/<split>.parquet``, with the Hugging Face features also in each file's
schema metadata as ``datasets`` writes them. So ``load_dataset("<bundle>/polaris")`` gives what
``load_dataset("yuwd/Polaris")`` gives, ``img`` decoding to an image. (It is not a configuration
of the bundle's own card: ``datasets`` reads every configuration of a folder with one builder,
and ``pairs`` and ``ratings`` may be CSV or JSON Lines.) Rows go out in row groups of ``BATCH``,
so an export with images never holds every image in memory.
"""

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annotators.scale import LEVELS

FOLDER = "polaris"
CARD = f"{FOLDER}/README.md"
BATCH = 256
LOWEST, HIGHEST = min(level.value for level in LEVELS), max(level.value for level in LEVELS)
# The Hugging Face features of Polaris's card, as datasets writes them in a Parquet file's metadata
# ("Sequence" rather than the newer "List": older datasets releases read only that one).
FEATURES = {
    "refs": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"},
    "cand": {"dtype": "string", "_type": "Value"},
    "img": {"_type": "Image"},
    "human_score": {"dtype": "float32", "_type": "Value"},
}
SCHEMA = pa.schema(
    [
        ("refs", pa.list_(pa.string())),
        ("cand", pa.string()),
        ("img", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("human_score", pa.float32()),
    ],
    metadata={b"huggingface": json.dumps({"info": {"features": FEATURES}}).encode()},
)


@dataclass(frozen=True)
class PolarisRow:
    refs: Sequence[str]
    cand: str
    image_file: str  # the image's file name in the bundle (images/ when exported with images)
    mean: float  # of the pair's counted ratings, on the 1..5 scale


def human_score(mean: float) -> float:
    """A mean rating on the 1..5 scale as Polaris's human_score on [0, 1]: (mean − 1) / 4."""
    return (mean - LOWEST) / (HIGHEST - LOWEST)


def polaris_write(path: Path, rows: Iterable[PolarisRow], image_bytes: Callable[[str], bytes | None] | None) -> int:
    """Write ``rows`` to ``path``; ``image_bytes(file name)`` gives an image's bytes (None: only
    its name goes out). Returns the number of rows written."""
    written = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, SCHEMA) as writer:
        batch: list[PolarisRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH:
                writer.write_table(_table(batch, image_bytes))
                written += len(batch)
                batch = []
        if batch or not written:  # an empty split is still a valid (empty) table
            writer.write_table(_table(batch, image_bytes))
            written += len(batch)
    return written


def _table(rows: list[PolarisRow], image_bytes: Callable[[str], bytes | None] | None) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "refs": [[str(ref) for ref in row.refs] for row in rows],
            "cand": [row.cand for row in rows],
            "img": [
                {"bytes": image_bytes(row.image_file) if image_bytes else None, "path": row.image_file} for row in rows
            ],
            "human_score": [human_score(row.mean) for row in rows],
        },
        schema=SCHEMA,
    )


def _data_file(split: str) -> str:
    """One split's table inside the Polaris folder, as its card names it."""
    return f"data/{split}.parquet"


def split_path(split: str) -> str:
    """Where one split's table lies inside the bundle: polaris/data/<split>.parquet."""
    return f"{FOLDER}/{_data_file(split)}"


def polaris_card(*, pretty_name: str, license_id: str, splits: Sequence[str]) -> str:
    """polaris/README.md: the header ``datasets`` reads (features, one file per split) and a few
    words on what the table holds; the bundle's own README.md says the rest."""
    lines = [
        "---",
        f"pretty_name: {json.dumps(pretty_name + ' (Polaris layout)')}",
        f"license: {json.dumps(license_id)}",
        "dataset_info:",
        "  features:",
        "  - name: refs",
        "    sequence: string",
        "  - name: cand",
        "    dtype: string",
        "  - name: img",
        "    dtype: image",
        "  - name: human_score",
        "    dtype: float32",
        "configs:",
        "- config_name: default",
        "  data_files:",
        *(line for split in splits for line in (f"  - split: {split}", f"    path: {json.dumps(_data_file(split))}")),
        "---",
        "",
        f"# {pretty_name}: the Polaris layout",
        "",
        "The validated pairs of this export as the caption-metric benchmarks Polaris (`yuwd/Polaris`) and",
        "Nebula lay them out, for the toolkits and scripts that score metrics on them:",
        '`datasets.load_dataset("path/to/the/export/polaris")`.',
        "",
        "- `refs`: the pair's reference captions (an empty list when it has none);",
        "- `cand`: the caption rated;",
        "- `img`: the image (its file name only when the export was made without images);",
        f"- `human_score`: (mean − {LOWEST}) / {HIGHEST - LOWEST} of the pair's validated ratings, on [0, 1]: "
        "Polaris's map of its five-point judgements.",
        "",
        "One row per pair; the splits are the export's (by image). The export's README.md describes the",
        "ratings, the raters and the licence of the images and captions.",
    ]
    return "\n".join(lines) + "\n"
