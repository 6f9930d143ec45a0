"""The 64/16/20 split by image (SPEC section 6, the VICR paper's section 6.1)."""

import hashlib
import json
from collections import Counter

import pytest

from scoring.export.bundle import export_build
from scoring.splits import SHARES, SPLITS, split_for_image
from tests.factories import CaptionPairFactory
from tests.scoring.export.export_world import pairs_add, world_build

HASHES = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(10_000)]


def test_shares_are_64_16_20_on_10k_images():
    counts = Counter(split_for_image(sha) for sha in HASHES)
    assert set(counts) == set(SPLITS)
    # Binomial sd on 10,000 draws is at most 0.005; 0.015 is three of them.
    for name, share in SHARES.items():
        assert counts[name] / len(HASHES) == pytest.approx(share, abs=0.015), counts


def test_the_split_is_a_function_of_the_image_and_the_seed():
    first = [split_for_image(sha, seed=4) for sha in HASHES[:500]]
    # Computed again, alone or after many other images, in another order, or with the hash upper-cased.
    assert [split_for_image(sha, seed=4) for sha in HASHES[:500]] == first
    assert [split_for_image(sha, seed=4) for sha in reversed(HASHES[:500])] == first[::-1]
    assert [split_for_image(sha.upper(), seed=4) for sha in HASHES[:500]] == first


def test_seeds_give_independent_splits():
    # Two independent 64/16/20 draws agree with probability .64² + .16² + .20² = 0.4752.
    same = sum(split_for_image(sha, seed=0) == split_for_image(sha, seed=1) for sha in HASHES)
    assert same / len(HASHES) == pytest.approx(0.4752, abs=0.02)


@pytest.mark.parametrize(("sha", "seed"), [("", 0), (None, 0), ("ab", 1.5), ("ab", True)])
def test_bad_arguments(sha, seed):
    with pytest.raises(ValueError):
        split_for_image(sha, seed=seed)


def read_pairs(path):
    return {row["pair_id"]: row for row in map(json.loads, path.read_text().splitlines())}


@pytest.mark.django_db
def test_export_never_puts_one_image_in_two_splits_and_keeps_splits_when_pairs_are_added(tmp_path):
    world = world_build()
    export_build(out_dir=tmp_path / "before", formats=("jsonl",), samples=2)
    before = read_pairs(tmp_path / "before" / "pairs.jsonl")
    # New pairs: fresh images, and a new caption on an image already exported.
    pairs_add(world, 12, first_image_seed=9000)
    known_image = world.game_pairs[0].image
    extra = CaptionPairFactory(image=known_image, caption="one more caption of a known image")
    world.rate(extra, [3, 3, 4])
    export_build(out_dir=tmp_path / "after", formats=("jsonl",), samples=2)
    after = read_pairs(tmp_path / "after" / "pairs.jsonl")

    assert set(before) < set(after)
    assert all(after[pair_id]["split"] == row["split"] for pair_id, row in before.items())
    split_of_image = {}
    for row in after.values():
        assert split_of_image.setdefault(row["image_sha256"], row["split"]) == row["split"]
    assert after[extra.pk]["split"] == split_of_image[known_image.sha256]
    assert {row["split"] for row in after.values()} == set(SPLITS)
