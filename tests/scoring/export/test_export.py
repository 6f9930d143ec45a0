"""The validated dataset export (SPEC section 6): the bundle's files, what they hold and what is kept out."""

import hashlib
import json
import math
import re
from collections import Counter, defaultdict

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.utils import timezone
from scipy import stats

from ratinggame.models import CaptionPair
from scoring import ordinal
from scoring.agreement import virtual_rater_report
from scoring.export.figures import distribution_bars_svg, source_shares_svg
from scoring.export.formats import formats_parse
from scoring.export.stats import _tau_c_replicates, metric_correlation
from scoring.models import ModelRating
from tests.factories import CaptionPairFactory, ImageFactory
from tests.scoring.export.bundle_files import (
    ALL_FORMATS,
    TagCounter,
    as_text_format,
    build,
    db_exported_pair_ids,
    read_csv,
    read_jsonl,
    valid_game_ratings,
)
from tests.scoring.export.export_world import CLIP, EXCLUDED_REASON

pytestmark = pytest.mark.django_db


def test_every_file_parses_and_the_three_formats_agree(world, tmp_path):
    counts = build(tmp_path / "out")
    out = tmp_path / "out"
    for name in ("pairs", "ratings"):
        from_csv = read_csv(out / f"{name}.csv")
        from_jsonl = read_jsonl(out / f"{name}.jsonl")
        from_parquet = pq.read_table(out / f"{name}.parquet").to_pylist()
        assert len(from_csv) == len(from_jsonl) == len(from_parquet) == counts[name]
        # Parquet keeps full types (UTC timestamps, full doubles); JSON Lines holds the same values
        # with ISO times and rounded floats; CSV the JSON Lines values as text.
        assert from_jsonl == [as_text_format(row) for row in from_parquet]
        as_text = [{k: "" if v is None else str(v) for k, v in row.items()} for row in from_jsonl]
        assert from_csv == as_text
    statistics = json.loads((out / "statistics.json").read_text())
    assert statistics["counts"] == counts
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == counts
    parser = TagCounter()
    parser.feed((out / "report.html").read_text())
    assert parser.tags["svg"] == 2 and parser.tags["title"] >= 3 and parser.tags["desc"] == 2
    assert parser.tags["table"] >= 4
    datasheet = (out / "datasheet.md").read_text()
    assert "Objects, a general scene, and actions are correctly identified" in datasheet


def test_the_datasheet_states_the_rules_as_the_game_applies_them(world, tmp_path, monkeypatch):
    # The numbers come from annotators.journey, the one home of SPEC 2: change one there and the
    # datasheet (and the dataset card, which shares the text) says the new number.
    from annotators import journey

    monkeypatch.setattr(journey, "WINDOW_SIZE", 12)
    monkeypatch.setattr(journey, "PROBATION_PASS_POINTS", 27)
    build(tmp_path / "out")
    for name in ("datasheet.md", "README.md"):
        text = (tmp_path / "out" / name).read_text()
        assert "The first 12 game ratings after each entry into the game must total\n   at least 25 points" in text
        assert "27 points or more lead to the game" in text
        assert "Rounds of 20 curated pairs" in text and "collects 3 to 7 ratings" in text


def test_the_datasheet_names_every_priming_model_configured(world, tmp_path, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": "", "PRIMING_FLEUR_MODEL": "/models/llava-1.5-7b"}
    build(tmp_path / "fleur")
    assert (
        "Priming model configured at export time:\n   `/models/llava-1.5-7b`"
        in (tmp_path / "fleur" / "datasheet.md").read_text()
    )
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": "ViT-B-32/openai"}
    build(tmp_path / "both")
    assert "`ViT-B-32/openai, /models/llava-1.5-7b`" in (tmp_path / "both" / "README.md").read_text()


FORMULAS = [
    '=HYPERLINK("http://evil.example/x","click")',
    "+cmd|' /C calc'!A0",
    "-2+3 people on a beach",
    "@SUM(A1:A9) a photo",
    "\t=1+1 a tabbed caption",
]


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_neutralised_and_the_others_stay_exact(world, tmp_path):
    """Issue 15: captions starting with = + - @ were written as they are in pairs.csv."""
    build(tmp_path / "first")
    exported = [row["pair_id"] for row in read_jsonl(tmp_path / "first" / "pairs.jsonl")][: len(FORMULAS)]
    ids = dict(zip(exported, FORMULAS, strict=True))
    for pair_id, caption in ids.items():
        CaptionPair.objects.filter(pk=pair_id).update(caption=caption)
    build(tmp_path / "out")
    out = tmp_path / "out"
    from_csv = {int(row["pair_id"]): row["caption"] for row in read_csv(out / "pairs.csv")}
    from_jsonl = {row["pair_id"]: row["caption"] for row in read_jsonl(out / "pairs.jsonl")}
    from_parquet = {row["pair_id"]: row["caption"] for row in pq.read_table(out / "pairs.parquet").to_pylist()}
    for pair_id, caption in ids.items():
        assert from_csv[pair_id] == "'" + caption
        assert from_jsonl[pair_id] == from_parquet[pair_id] == caption
    assert all(not caption.startswith("'") for pair_id, caption in from_csv.items() if pair_id not in ids)


def test_counts_match_the_database(world, tmp_path):
    out = tmp_path / "out"
    counts = build(out)
    exported = db_exported_pair_ids()
    pairs = read_jsonl(out / "pairs.jsonl")
    ratings = read_jsonl(out / "ratings.jsonl")
    assert {row["pair_id"] for row in pairs} == exported
    assert counts["pairs"] == len(exported)
    assert counts["ratings"] == valid_game_ratings().filter(pair__in=exported).count() == len(ratings)
    assert counts["raters"] == valid_game_ratings().filter(pair__in=exported).values("rater").distinct().count()
    assert counts["images"] == len({row["image_sha256"] for row in pairs})
    assert counts["game_pairs"] == CaptionPair.objects.game().count()
    assert counts["pairs_left_out_too_few_ratings"] == CaptionPair.objects.game().count() - len(exported)
    # Each pair's ratings in the file are exactly its non-excluded game ratings in the database.
    from_file = defaultdict(list)
    for row in ratings:
        from_file[row["pair_id"]].append(row["rating"])
    for pair_id in exported:
        expected = sorted(valid_game_ratings().filter(pair_id=pair_id).values_list("value", flat=True))
        assert sorted(from_file[pair_id]) == expected
    for row in pairs:
        assert row["num_ratings"] == len(from_file[row["pair_id"]])


def test_exclusions_primes_tutorial_probation_and_short_pairs_are_kept_out(world, tmp_path):
    out = tmp_path / "out"
    counts = build(out)
    pair_ids = {row["pair_id"] for row in read_jsonl(out / "pairs.jsonl")}
    rated_ids = {row["pair_id"] for row in read_jsonl(out / "ratings.jsonl")}
    for left_out in (
        world.short_pair,
        world.excluded_short_pair,  # 2 valid ratings: the excluded third does not count
        world.unrated_pair,
        world.tutorial_pair,
        world.probation_pair,
    ):
        assert left_out.pk not in pair_ids
        assert left_out.pk not in rated_ids
    excluded_row = next(row for row in read_jsonl(out / "pairs.jsonl") if row["pair_id"] == world.excluded_pair.pk)
    assert excluded_row["num_ratings"] == 3 and excluded_row["mean"] == round(13 / 3, 4)  # 4 decimals in JSON Lines
    # Excluded ratings are counted by reason; the one without a reason is named so.
    assert counts["excluded_ratings"] == {
        "total": 3,
        "by_reason": {"(no reason recorded)": 1, EXCLUDED_REASON: 2},
    }
    assert counts["tutorial_and_probation_ratings"] == {"tutorial": 4, "probation": 3}
    assert counts["ratings_on_left_out_pairs"] == 4  # short pair 2 + excluded-short pair 2
    # Model primes are scores of pairs, never ratings: the rating count is the human count.
    assert counts["ratings"] == valid_game_ratings().filter(pair__in=pair_ids).count()
    statistics = json.loads((out / "statistics.json").read_text())
    assert statistics["counts"]["pairs_left_out_too_few_ratings"] == 3


def test_lower_min_ratings_lets_short_pairs_in(world, tmp_path):
    counts = build(tmp_path / "out", min_ratings=2, formats=("jsonl",))
    pair_ids = {row["pair_id"] for row in read_jsonl(tmp_path / "out" / "pairs.jsonl")}
    assert world.short_pair.pk in pair_ids and world.excluded_short_pair.pk in pair_ids
    assert world.unrated_pair.pk not in pair_ids
    assert pair_ids == db_exported_pair_ids(min_ratings=2)
    # The agreement statistics still use only pairs with 3 ratings and say how many they left out.
    statistics = json.loads((tmp_path / "out" / "statistics.json").read_text())
    assert statistics["agreement"]["pairs_left_out"] == 2
    assert statistics["agreement"]["pairs_used"] == counts["pairs"] - 2


def test_pair_summary_columns_hand_computed(world, tmp_path):
    # Ratings [2, 3, 3, 2]: mean 2.5, consensus rounded half up = 3, sample sd = sqrt(4 * 0.25 / 3).
    pair = CaptionPairFactory(image=ImageFactory(seed=7990), caption="mean two and a half", source="flickr8k")
    world.rate(pair, [2, 3, 3, 2])
    build(tmp_path / "out", formats=("jsonl",))
    row = next(r for r in read_jsonl(tmp_path / "out" / "pairs.jsonl") if r["pair_id"] == pair.pk)
    assert row["mean"] == 2.5
    assert row["consensus"] == 3
    assert row["sd"] == round(math.sqrt(1 / 3), 4)  # 4 decimals in JSON Lines
    assert row["caption"] == "mean two and a half"
    assert row["source"] == "flickr8k"
    # The ordinal model's label, by the population's model (no rater fitted yet): after two 2s and
    # two 3s, 2 is a little likelier (a true 3 would also give 4s), with its probability beside it.
    evidence = None
    for value in (2, 3, 3, 2):
        evidence = ordinal.evidence_add(evidence, value, None)
    assert (row["label"], row["label_probability"]) == (2, round(ordinal.label_of(evidence)[1], 4))
    assert 0.4 < row["label_probability"] < 0.6
    # With the refit's level prior (a study where 3s are common), the same ratings read as a 3, and
    # the manifest names the prior the labels were read with.
    from ratinggame.models import LevelPrior

    shares = (0.05, 0.15, 0.5, 0.2, 0.1)
    LevelPrior.objects.create(fitted_at=timezone.now(), shares=list(shares), pairs=100)
    build(tmp_path / "again", formats=("jsonl",))
    row = next(r for r in read_jsonl(tmp_path / "again" / "pairs.jsonl") if r["pair_id"] == pair.pk)
    assert (row["label"], row["label_probability"]) == (3, round(ordinal.label_of(evidence, shares)[1], 4))
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest["parameters"]["level_prior"] == list(shares)


def test_model_scores_are_columns_raw_and_calibrated(world, tmp_path):
    build(tmp_path / "out", formats=("jsonl",))
    statistics = json.loads((tmp_path / "out" / "statistics.json").read_text())
    columns = {(m["metric"], m["model_identity"]): m for m in statistics["model_scores"]}
    clip = columns[CLIP]
    rows = read_jsonl(tmp_path / "out" / "pairs.jsonl")
    stored = {
        pair_id: (raw, value)
        for pair_id, raw, value in ModelRating.objects.filter(metric=CLIP[0]).values_list(
            "pair_id", "raw_score", "value"
        )
    }
    for row in rows:
        raw, value = stored.get(row["pair_id"], (None, None))
        # JSON Lines rounds: raw scores to 6 decimals, calibrated ratings to 4 (Parquet keeps all).
        expected = (raw, value) if raw is None else (round(raw, 6), round(value, 4))
        assert (row[clip["column_raw"]], row[clip["column_calibrated"]]) == expected
    assert clip["pairs"] == sum(1 for row in rows if row["pair_id"] in stored)


def test_fleur_explanations_are_a_column_beside_fleurs_scores(world, tmp_path):
    fleur = ("fleur", "/models/llava weights=abc")
    explained, silent = world.game_pairs[0], world.game_pairs[1]
    ModelRating.objects.filter(pair__in=[explained, silent], slot=2).delete()
    ModelRating.objects.create(
        pair=explained, slot=2, model_identity=fleur[1], metric=fleur[0], raw_score=0.81, value=4.24,
        explanation="The caption names the dog, \"not\" the park;\nshort.",
    )  # fmt: skip
    ModelRating.objects.create(pair=silent, slot=2, model_identity=fleur[1], metric=fleur[0], raw_score=0.4, value=2.6)
    build(tmp_path / "out")
    statistics = json.loads((tmp_path / "out" / "statistics.json").read_text())
    columns = {(m["metric"], m["model_identity"]): m for m in statistics["model_scores"]}
    column = columns[fleur]["column_explanation"]
    assert column == columns[fleur]["column_calibrated"].replace("__calibrated", "__explanation")
    assert "column_explanation" not in columns[CLIP]  # CLIP-S gives no explanations
    for rows in (read_jsonl(tmp_path / "out" / "pairs.jsonl"), read_csv(tmp_path / "out" / "pairs.csv")):
        names = list(rows[0])
        assert names.index(column) == names.index(columns[fleur]["column_calibrated"]) + 1
        by_pair = {int(row["pair_id"]): row[column] for row in rows}
        assert by_pair[explained.pk] == 'The caption names the dog, "not" the park;\nshort.'
        assert by_pair[silent.pk] in (None, "")  # a FLEUR prime without an explanation
    table = pq.read_table(tmp_path / "out" / "pairs.parquet").to_pydict()
    assert table[column][table["pair_id"].index(explained.pk)].startswith("The caption names the dog")


def test_metric_correlation_is_method_a_on_the_test_split(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("csv",))
    statistics = json.loads((out / "statistics.json").read_text())
    column = next(m for m in statistics["model_scores"] if (m["metric"], m["model_identity"]) == CLIP)
    pairs = {row["pair_id"]: row for row in read_csv(out / "pairs.csv")}
    # Recomputed from the files with scipy: one row per human rating of each test-split pair.
    scores, ratings = [], []
    for row in read_csv(out / "ratings.csv"):
        pair = pairs[row["pair_id"]]
        if pair["split"] == "test" and pair[column["column_raw"]]:
            scores.append(float(pair[column["column_raw"]]))
            ratings.append(int(row["rating"]))
    assert len(set(scores)) > 1, "the fixed world should put scored pairs of several qualities in the test split"
    expected = 100 * stats.kendalltau(scores, ratings, variant="c").statistic
    found = next(
        c for c in statistics["metric_correlations"] if (c["metric"], c["model_identity"], c["score"]) == (*CLIP, "raw")
    )
    assert found["tau_c"] == pytest.approx(expected)
    assert found["ratings"] == len(ratings) and found["split"] == "test"


def test_metric_correlations_per_caption_source_are_method_a_on_each_sources_test_pairs(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("csv",))
    statistics = json.loads((out / "statistics.json").read_text())
    column = next(m for m in statistics["model_scores"] if (m["metric"], m["model_identity"]) == CLIP)
    pairs = {row["pair_id"]: row for row in read_csv(out / "pairs.csv")}
    rows_by_source = defaultdict(lambda: ([], []))
    for row in read_csv(out / "ratings.csv"):
        pair = pairs[row["pair_id"]]
        if pair["split"] == "test" and pair[column["column_raw"]]:
            scores, ratings = rows_by_source[pair["source"]]
            scores.append(float(pair[column["column_raw"]]))
            ratings.append(int(row["rating"]))
    by_source = statistics["metric_correlations_by_source"]
    assert set(by_source) == {row["source"] for row in pairs.values()}
    checked = 0
    for source, (scores, ratings) in rows_by_source.items():
        found = next(c for c in by_source[source] if (c["metric"], c["model_identity"], c["score"]) == (*CLIP, "raw"))
        assert found["ratings"] == len(ratings)
        if len(set(scores)) > 1 and len(set(ratings)) > 1:
            assert found["tau_c"] == pytest.approx(100 * stats.kendalltau(scores, ratings, variant="c").statistic)
            checked += 1
    assert checked >= 2, "the fixed world should put scored test pairs of several sources and qualities"
    # The sources together hold the test split's rows, and every per-source figure says how few it rests on.
    overall = next(
        c for c in statistics["metric_correlations"] if (c["metric"], c["model_identity"], c["score"]) == (*CLIP, "raw")
    )
    assert overall["ratings"] == sum(len(ratings) for _, ratings in rows_by_source.values())
    assert all(row["too_few"] for rows in by_source.values() for row in rows)  # 30 pairs: under the minimum
    report = (out / "report.html").read_text()
    assert "by caption source" in report and "Too few to interpret" in report


def test_pseudonymous_rater_ids(world, tmp_path):
    build(tmp_path / "out", formats=("jsonl",))
    rows = read_jsonl(tmp_path / "out" / "ratings.jsonl")
    users = {(user.username, str(user.pk)) for user in world.raters}
    forbidden = {name for pair in users for name in pair}
    raters = [row["rater"] for row in rows]
    assert all(re.fullmatch(r"r\d{3}", rater) for rater in raters)
    assert not forbidden & set(raters)
    # Numbered in order of first rating; one rater is one pseudonym (matched back through the DB).
    first_seen = list(dict.fromkeys(raters))
    assert first_seen == [f"r{n:03d}" for n in range(1, len(first_seen) + 1)]
    by_time = {
        (pair_id, submitted.isoformat(timespec="milliseconds").replace("+00:00", "Z")): rater_id
        for pair_id, submitted, rater_id in valid_game_ratings().values_list("pair_id", "submitted_at", "rater_id")
    }
    pseudonym_of = defaultdict(set)
    for row in rows:
        pseudonym_of[by_time[(row["pair_id"], row["submitted_at"])]].add(row["rater"])
    assert all(len(names) == 1 for names in pseudonym_of.values())
    assert len({next(iter(names)) for names in pseudonym_of.values()}) == len(pseudonym_of)


def test_ratings_rows_times_and_seconds(world, tmp_path):
    build(tmp_path / "out", formats=("jsonl",))
    rows = read_jsonl(tmp_path / "out" / "ratings.jsonl")
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", row["submitted_at"]) for row in rows)
    # export_world gives rater j of a pair 4 + j seconds.
    assert {row["seconds_spent"] for row in rows} <= {4.0 + j for j in range(7)}


def test_agreement_and_distributions(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("jsonl",), seed=3)
    statistics = json.loads((out / "statistics.json").read_text())
    per_pair = defaultdict(list)
    for pair_id, value in valid_game_ratings().order_by("submitted_at", "id").values_list("pair_id", "value"):
        per_pair[pair_id].append(value)
    exported = sorted(db_exported_pair_ids())
    direct = virtual_rater_report([per_pair[p] for p in exported], samples=100, seed=3)
    assert statistics["agreement"] == direct
    # Distribution of rounded means: mean rounded half up, counted by hand from the database.
    rows = read_jsonl(out / "pairs.jsonl")
    expected = Counter(math.floor(sum(per_pair[p]) / len(per_pair[p]) + 0.5) for p in exported)
    assert statistics["rating_distribution"] == {str(level): expected.get(level, 0) for level in range(1, 6)}
    per_source = Counter(row["source"] for row in rows)
    assert {s: sum(d.values()) for s, d in statistics["source_distributions"].items()} == per_source
    assert statistics["paper_table3"]["VICR"]["tau_X_YZ"] == 75.6
    html = (out / "report.html").read_text()
    for figure in ("75.6", "77.8", "78.1", "93.8", "58.1", "47.7", "54.8", "54.0", "84.0", "48.8"):
        assert figure in html


def test_same_seed_same_statistics_other_seed_other_draws(world, tmp_path):
    build(tmp_path / "a", seed=5, formats=("csv",))
    build(tmp_path / "b", seed=5, formats=("csv",))
    build(tmp_path / "c", seed=6, formats=("csv",))
    a, b, c = (json.loads((tmp_path / name / "statistics.json").read_text()) for name in "abc")
    assert a == b
    assert (tmp_path / "a" / "pairs.csv").read_bytes() == (tmp_path / "b" / "pairs.csv").read_bytes()
    assert (tmp_path / "a" / "report.html").read_bytes() == (tmp_path / "b" / "report.html").read_bytes()
    assert a["agreement"] != c["agreement"]


def test_manifest_checksums_match_the_files(world, tmp_path):
    out = tmp_path / "out"
    build(out, with_images=True)
    manifest = json.loads((out / "manifest.json").read_text())
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(manifest["files"]) == on_disk
    for name, entry in manifest["files"].items():
        data = (out / name).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["bytes"] == len(data)
    assert manifest["parameters"] == {
        "min_ratings": 3,
        "seed": 0,
        "samples": 100,
        "resamples": 1000,
        "formats": list(ALL_FORMATS),
        "with_images": True,
        "assignment_policy": settings.RATINGGAME["ASSIGNMENT_POLICY"],
        "settled_threshold": settings.RATINGGAME["SETTLED_THRESHOLD"],
        "level_prior": None,  # no refit yet: a flat prior
    }
    assert manifest["code_version"]


def test_with_images_copies_each_exported_image_once(world, tmp_path):
    out = tmp_path / "out"
    counts = build(out, with_images=True, formats=("jsonl",))
    rows = read_jsonl(out / "pairs.jsonl")
    files = sorted(p.name for p in (out / "images").iterdir())
    assert files == sorted({row["image_file"] for row in rows})
    assert len(files) == counts["images"] and counts["images_missing"] == 0
    for row in rows:
        assert hashlib.sha256((out / "images" / row["image_file"]).read_bytes()).hexdigest() == row["image_sha256"]


def test_metric_correlation_hand_computed():
    # Pair a (score 0.1) rated [1, 2], pair b (0.5) rated [2], pair c (0.9) rated [3, 3]; pair d has
    # no ratings. Rows (score, rating): (.1,1) (.1,2) (.5,2) (.9,3) (.9,3): n = 5, m = 3 classes.
    # Of the 10 row pairs 7 are concordant, 0 discordant, 3 tied: τ_c = 2·7 / (25 · 2/3) = 0.84.
    result = metric_correlation({"a": 0.1, "b": 0.5, "c": 0.9, "d": 0.2}, {"a": [1, 2], "b": [2], "c": [3, 3]})
    assert result == {"tau_c": pytest.approx(84.0), "pairs": 3, "ratings": 5, "too_few": True}
    assert metric_correlation({"a": 0.1}, {"a": [3]})["tau_c"] is None  # one row: nothing to rank


def test_figures_escape_text_and_describe_every_value():
    svg = source_shares_svg({"<script>": {"1": 1, "2": 0, "3": 0, "4": 0, "5": 3}}, figure_id="f", title="A & B")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "A &amp; B" in svg
    assert "rating 5 75%" in svg  # the desc states each share
    bars = distribution_bars_svg({"1": 2, "2": 0, "3": 5, "4": 1, "5": 0}, figure_id="g", title="t")
    assert "rating 3: 5 pairs" in bars and "8 pairs in all" in bars


def test_formats_parse():
    assert formats_parse("csv, JSONL,csv") == ("csv", "jsonl")
    with pytest.raises(ValueError, match="no format"):
        formats_parse(" , ")


def test_resampled_correlations_are_scipy_on_the_resampled_rows():
    """Each bootstrap replicate of a metric correlation is τ_c of the rows of the pairs drawn
    (a pair drawn twice gives its rows twice), computed here without scipy; checked with scipy."""
    rng = np.random.default_rng(3)
    scores = np.round(rng.uniform(0, 1, 60), 1)  # ties in the score too
    counts = np.array([np.bincount(rng.integers(1, 6, rng.integers(3, 8)), minlength=6)[1:] for _ in scores])
    weights = np.vstack([np.ones(60), rng.multinomial(60, np.full(60, 1 / 60), size=5)])
    ours = _tau_c_replicates(scores, counts.astype(float), weights)
    for row, found in zip(weights.astype(int), ours, strict=True):
        xs = [s for s, c, w in zip(scores, counts, row, strict=True) for level in range(5) for _ in range(c[level] * w)]
        ys = [level + 1 for c, w in zip(counts, row, strict=True) for level in range(5) for _ in range(c[level] * w)]
        assert found == pytest.approx(stats.kendalltau(xs, ys, variant="c").statistic)


def test_every_statistic_has_an_interval_and_small_sets_are_flagged(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=10, resamples=200)
    statistics = json.loads((out / "statistics.json").read_text())
    for key in ("tau_X_YZ", "kendall_w", "fleiss_kappa", "krippendorff_alpha"):
        found = statistics["agreement"][key]
        assert found["ci_low"] <= found["mean"] <= found["ci_high"], key
    for key in ("krippendorff_alpha_ordinal", "krippendorff_alpha_interval", "icc1", "icc1k"):
        found = statistics["agreement_all_ratings"][key]
        assert found["ci_low"] <= found["value"] <= found["ci_high"], key
    sources = {pair["source"] for pair in read_csv(out / "pairs.csv")}
    assert set(statistics["agreement_by_source"]) == sources
    # The fixed world is small: 31 pairs pass the documented minimum of 30, its sources and its
    # test split do not, and say so.
    assert statistics["agreement"]["pairs_used"] == 31 and statistics["agreement_too_few"] is False
    assert all(block["pairs"] < 30 and block["too_few"] for block in statistics["agreement_by_source"].values())
    assert all(row["too_few"] for row in statistics["metric_correlations"])
    inside = statistics["paper_comparison"]["VICR"]["kendall_w"]
    low, high = statistics["agreement"]["kendall_w"]["ci_low"], statistics["agreement"]["kendall_w"]["ci_high"]
    assert inside == {"paper": 93.8, "inside": low <= 93.8 <= high}
    report = (out / "report.html").read_text()
    datasheet = (out / "datasheet.md").read_text()
    card = (out / "README.md").read_text()
    for text in (report, datasheet):
        assert "95% interval" in text
    for text in (report, datasheet, card):  # the interval method, named where the figures are
        assert "bootstrap over pairs, its levels expanded for small samples (Hesterberg 2015)" in text
    assert "Too few to interpret (at least 30 pairs needed)" in report  # the sources' rows
    # Every row of the per-source table keeps a cell per column, too few or not.
    table = report.split("<caption>Agreement per caption source")[1].split("</table>")[0]
    header, *rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    assert rows and all(row.count("<td") + row.count("<th") == header.count("<th") == 7 for row in rows)
    assert all("(too few to interpret)" in row for row in rows)
    assert "(too few to interpret)" in datasheet
    assert "VICR inside our interval?" in report and "ICC(1,k)" in report and "ICC(1,k)" in datasheet
