"""The export's table in the layout of Polaris and Nebula (scoring.export.polaris): exactly Polaris's
columns and types (the Hugging Face dataset yuwd/Polaris: refs, cand, img, human_score), one row per
exported pair, each row's values from its pair."""

import hashlib
import statistics

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image as PILImage

from ratinggame.models import CaptionPair, Rating
from scoring.splits import SPLITS
from tests.scoring.export.export_world import world_build
from tests.scoring.export.test_export import build, read_csv

pytestmark = pytest.mark.django_db

# yuwd/Polaris's card: refs sequence of string, cand string, img image, human_score float32.
POLARIS_ARROW = pa.schema(
    [
        ("refs", pa.list_(pa.string())),
        ("cand", pa.string()),
        ("img", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("human_score", pa.float32()),
    ]
)
REFERENCES = ["A dog runs on the beach.", "A brown dog running along the shore."]


@pytest.fixture
def world():
    world = world_build()
    CaptionPair.objects.filter(pk=world.game_pairs[0].pk).update(references=REFERENCES)
    return world


def polaris_rows(out) -> dict[str, list[dict]]:
    tables = {split: pq.read_table(out / f"polaris/data/{split}.parquet") for split in SPLITS}
    for table in tables.values():
        assert table.schema.remove_metadata() == POLARIS_ARROW  # these columns, in this order, these types
    return {split: table.to_pylist() for split, table in tables.items()}


def test_each_exported_pair_is_one_row_with_its_caption_references_image_and_mapped_mean(world, tmp_path):
    out = tmp_path / "out"
    counts = build(out, formats=("csv",), samples=2, resamples=0)
    rows = polaris_rows(out)
    pairs = {int(row["pair_id"]): row for row in read_csv(out / "pairs.csv")}
    assert sum(len(split_rows) for split_rows in rows.values()) == counts["pairs"] == len(pairs)

    by_caption = {pair.caption: pair for pair in CaptionPair.objects.select_related("image")}
    seen = set()
    for split, split_rows in rows.items():
        for row in split_rows:
            pair = by_caption[row["cand"]]
            seen.add(pair.pk)
            assert pairs[pair.pk]["split"] == split
            # The mean of the pair's counted ratings, read here from the ratings themselves.
            values = list(Rating.objects.counted().filter(pair=pair).values_list("value", flat=True))
            assert len(values) >= 3
            assert row["human_score"] == pytest.approx((statistics.fmean(values) - 1) / 4, abs=1e-6)
            assert 0.0 <= row["human_score"] <= 1.0
            assert row["refs"] == (REFERENCES if pair.pk == world.game_pairs[0].pk else [])
            assert row["img"] == {"bytes": None, "path": pairs[pair.pk]["image_file"]}  # no images: the name only
    assert seen == set(pairs)
    # The excluded rating of excluded_pair does not move its score.
    excluded = world.excluded_pair
    row = next(row for split_rows in rows.values() for row in split_rows if row["cand"] == excluded.caption)
    counted = Rating.objects.counted().filter(pair=excluded).values_list("value", flat=True)
    every = Rating.objects.filter(pair=excluded).values_list("value", flat=True)
    assert statistics.fmean(counted) != statistics.fmean(every)
    assert row["human_score"] == pytest.approx((statistics.fmean(counted) - 1) / 4, abs=1e-6)


def test_with_images_each_row_carries_its_image_file(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2, resamples=0, with_images=True)
    by_caption = {pair.caption: pair for pair in CaptionPair.objects.select_related("image")}
    rows = [row for split_rows in polaris_rows(out).values() for row in split_rows]
    assert rows
    for row in rows:
        image = by_caption[row["cand"]].image
        assert hashlib.sha256(row["img"]["bytes"]).hexdigest() == image.sha256
        assert row["img"]["path"] == image.file.name.rsplit("/", 1)[-1]


@pytest.mark.datasets
def test_it_loads_as_polaris_loads(world, tmp_path, load_dataset):
    from datasets import Features, Image, List, Value

    out = tmp_path / "out"
    build(out, formats=("jsonl",), samples=2, resamples=0, with_images=True)
    polaris = load_dataset(out / "polaris", None)  # as load_dataset("yuwd/Polaris")
    assert set(polaris) == set(SPLITS)
    expected = Features(
        {"refs": List(Value("string")), "cand": Value("string"), "img": Image(), "human_score": Value("float32")}
    )
    test = polaris["test"]
    assert test.features == expected
    first = test[0]
    stored = CaptionPair.objects.select_related("image").get(caption=first["cand"]).image
    with stored.file.open("rb") as handle, PILImage.open(handle) as original:
        assert first["img"].size == original.size  # decoded to an image, as Polaris's
