"""The bundle's dataset card (README.md): it loads with Hugging Face datasets into its configs and splits."""

import json
import re

import pyarrow as pa
import pytest
import yaml

from tests.scoring.export.test_export import build, read_csv

pytestmark = pytest.mark.django_db


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


@pytest.mark.datasets
@pytest.mark.parametrize("formats", [("csv", "parquet"), ("jsonl",)])
def test_the_bundle_loads_into_its_configs_and_splits(world, tmp_path, load_dataset, formats):
    out = tmp_path / "out"
    counts = build(out, formats=formats, samples=2, resamples=0)
    statistics = json.loads((out / "statistics.json").read_text())
    pairs = load_dataset(out, "pairs")
    ratings = load_dataset(out, "ratings")
    assert set(pairs) == set(ratings) == {"train", "validation", "test"}
    for split in ("train", "validation", "test"):
        assert pairs[split].num_rows == statistics["splits"][split]["pairs"]
        assert ratings[split].num_rows == statistics["splits"][split]["ratings"]
        assert set(pairs[split]["split"]) <= {split}
    assert sum(ratings[s].num_rows for s in ratings) == counts["ratings"]
    assert "caption" in pairs["train"].column_names and "rating" in ratings["train"].column_names
    if "parquet" in formats:  # typed: the time is a UTC timestamp, not a string
        assert ratings["train"].features["submitted_at"].pa_type == pa.timestamp("ms", tz="UTC")


def test_the_card_header_names_the_configs_splits_and_an_honest_license(world, tmp_path, settings):
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2, resamples=0)
    card = (out / "README.md").read_text()
    header = front_matter(card)
    assert header["license"] == "unknown" and "No licence was set for this export" in card
    configs = {config["config_name"]: config for config in header["configs"]}
    assert set(configs) == {"pairs", "ratings"} and configs["pairs"]["default"] is True
    for config in configs.values():
        splits = {entry["split"]: entry["path"] for entry in config["data_files"]}
        assert set(splits) == {"train", "validation", "test"}
        assert all((out / path).is_file() for path in splits.values())
    # Every pair is in exactly one split file, and in the split its row names.
    split_rows = [row for split in ("train", "validation", "test") for row in read_csv(out / f"data/pairs-{split}.csv")]
    assert sorted(split_rows, key=lambda row: int(row["pair_id"])) == read_csv(out / "pairs.csv")
    for section in ("## Loading", "## Image sources and credits", "## Intended uses", "## Known limitations"):
        assert section in card
    assert "Objects, a general scene, and actions are correctly identified" in card  # the collection process
    assert "@inproceedings{narins2023vicr" in card and "@software{caption_rating_game" in card

    settings.RATINGGAME = {**settings.RATINGGAME, "DATASET_LICENSE": "cc-by-4.0"}
    build(out, formats=("csv",), samples=2, resamples=0)
    card = (out / "README.md").read_text()
    assert front_matter(card)["license"] == "cc-by-4.0" and "`cc-by-4.0`" in card


def test_the_card_states_how_the_text_formats_round_each_column(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("csv", "jsonl"), samples=2, resamples=0)
    card = (out / "README.md").read_text()
    assert "- to 3 decimals: `seconds_spent`\n" in card
    assert "- to 4 decimals: `mean`, `sd`, `label_probability`, `ds_posterior`" in card
    # What the card says is what the files hold: no more decimals than stated.
    stated = {
        name: int(digits)
        for digits, names in re.findall(r"to (\d) decimals: ((?:`\w+`(?:, )?)+)", card)
        for name in re.findall(r"`(\w+)`", names)
    }
    pairs = read_csv(out / "pairs.csv")
    for row in [*pairs, *read_csv(out / "ratings.csv")]:
        for name, digits in stated.items():
            if row.get(name):
                assert len(row[name].partition(".")[2]) <= digits, (name, row[name])
    assert any(len(row["mean"].partition(".")[2]) == 4 for row in pairs)  # a mean of 3 ratings: 4 decimals
