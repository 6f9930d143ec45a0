"""What the export carries of rater competency: the latest analysis, its regression and its
warnings, and Dawid-Skene's rater quality."""

import hashlib
import json
import re
from collections import defaultdict

import pytest
from django.utils import timezone

from annotators.competency.jobs import competency_analysis_run
from annotators.models import CompetencyAnalysis, RaterProfile
from tests.factories import CaptionPairFactory, ImageFactory
from tests.scoring.export.bundle_files import (
    TagCounter,
    build,
    read_csv,
    read_jsonl,
    valid_game_ratings,
)

pytestmark = pytest.mark.django_db


def competency_run(world) -> CompetencyAnalysis:
    """Give the world's raters profiles with tutorial scores and run the real analysis inline."""

    for index, user in enumerate(world.raters):
        RaterProfile.objects.create(user=user, state="game", tutorial_score=10 + index)
    analysis = CompetencyAnalysis.objects.create()
    assert competency_analysis_run(analysis_id=analysis.pk) == CompetencyAnalysis.Status.DONE
    analysis.refresh_from_db()
    return analysis


def test_without_a_competency_analysis_the_bundle_says_so(world, tmp_path):
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2)
    competency = json.loads((out / "statistics.json").read_text())["competency"]
    assert competency["available"] is False
    assert "No rater-competency analysis had finished" in competency["note"]
    assert not (out / "wright_map.svg").exists()
    assert "wright_map.svg" not in json.loads((out / "manifest.json").read_text())["files"]
    report = (out / "report.html").read_text()
    assert "Rater competency (Partial Credit Model)" in report
    assert "No rater-competency analysis had finished" in report
    assert "No rater-competency analysis had finished" in (out / "datasheet.md").read_text()


def test_the_latest_competency_analysis_is_in_the_bundle_with_pseudonyms_only(world, tmp_path):
    analysis = competency_run(world)
    regression = analysis.regression
    # The regression's competency is fitted on game pairs only: a few raters, marked too few.
    assert 3 <= regression["n"] <= len(world.raters) and regression["coef_per_10_percent"] is not None
    assert regression["too_few"] is True
    out = tmp_path / "out"
    build(out, formats=("jsonl",), samples=2)

    statistics = json.loads((out / "statistics.json").read_text())
    competency = statistics["competency"]
    assert competency["available"] is True
    assert competency["n_raters"] == analysis.n_raters
    for key in ("coef_per_10_percent", "se_per_10_percent", "p_value", "n"):
        assert competency["regression"][key] == pytest.approx(regression[key])
    assert competency["paper_regression"]["coef_per_10_percent"] == 0.17
    assert competency["wright_map_file"] == "wright_map.svg"

    # The Wright map is a file of its own, listed with its checksum, and inline in the report.
    svg = (out / "wright_map.svg").read_text()
    assert svg.strip() == analysis.wright_map_svg
    entry = json.loads((out / "manifest.json").read_text())["files"]["wright_map.svg"]
    assert entry["sha256"] == hashlib.sha256((out / "wright_map.svg").read_bytes()).hexdigest()
    report = (out / "report.html").read_text()
    assert 'aria-labelledby="wright-map-title wright-map-desc"' in report
    assert f"{regression['coef_per_10_percent']:+.3f}" in report and "+0.17" in report
    assert f"{regression['se_per_10_percent']:.3f}" in report
    parser = TagCounter()
    parser.feed(report)
    assert parser.tags["svg"] == 3  # the two charts and the Wright map

    # Raters appear under the export's pseudonyms with their competency, matched back through
    # the ratings file; never a username or an internal id.
    by_time = {
        (pair_id, submitted.isoformat(timespec="milliseconds").replace("+00:00", "Z")): rater_id
        for pair_id, submitted, rater_id in valid_game_ratings().values_list("pair_id", "submitted_at", "rater_id")
    }
    user_of = {
        row["rater"]: by_time[(row["pair_id"], row["submitted_at"])] for row in read_jsonl(out / "ratings.jsonl")
    }
    profile_of = dict(RaterProfile.objects.values_list("user_id", "id"))
    assert {row["rater"] for row in competency["raters"]} == set(user_of)
    for row in competency["raters"]:
        ability, se = analysis.abilities[str(profile_of[user_of[row["rater"]]])]
        assert (row["competency"], row["se"]) == (pytest.approx(ability), pytest.approx(se))
    assert competency["raters_not_in_export"] == len(analysis.abilities) - len(user_of)
    texts = [(out / name).read_text() for name in ("statistics.json", "report.html", "datasheet.md", "wright_map.svg")]
    for user in world.raters:
        for text in texts:
            assert not re.search(rf"\b{user.username}\b", text), user.username
    assert "abilities" not in competency and "id" not in competency


def test_a_later_export_without_an_analysis_drops_the_old_wright_map(world, tmp_path):
    competency_run(world)
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2)
    assert (out / "wright_map.svg").is_file()
    CompetencyAnalysis.objects.all().delete()
    build(out, formats=("csv",), samples=2)
    assert not (out / "wright_map.svg").exists()
    assert "wright_map.svg" not in json.loads((out / "manifest.json").read_text())["files"]


def test_a_fit_that_did_not_converge_is_flagged_in_the_report_and_datasheet(world, tmp_path):
    CompetencyAnalysis.objects.create(
        status=CompetencyAnalysis.Status.DONE,
        finished_at=timezone.now(),
        details={"converged": False, "game_items": 3, "tutorial_items": 0, "probation_items": 0},
        regression={"n": 8, "too_few": True, "min_raters": 20, "coef_per_10_percent": 0.78, "converged": False},
    )
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2)
    competency = json.loads((out / "statistics.json").read_text())["competency"]
    assert competency["details"]["converged"] is False and competency["regression"]["too_few"] is True
    report = (out / "report.html").read_text()
    datasheet = (out / "datasheet.md").read_text()
    assert "the Partial Credit Model did not converge" in report
    assert "the Partial Credit Model did not converge" in datasheet
    assert "Too few raters to interpret (20 needed): +0.780" in report
    assert "too few raters\nto interpret (n = 8, at least 20 needed" in datasheet


def test_dawid_skene_columns_and_rater_quality_beside_the_raw_ratings(world, tmp_path):
    unanimous = CaptionPairFactory(image=ImageFactory(seed=90), caption="all four")
    world.rate(unanimous, [4, 4, 4])
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2, resamples=0)
    pairs = read_csv(out / "pairs.csv")
    ratings = read_csv(out / "ratings.csv")
    assert all(row["ds_label"] in {"1", "2", "3", "4", "5"} for row in pairs)
    assert all(0.2 <= float(row["ds_posterior"]) <= 1 for row in pairs)
    # Unanimous pairs keep their level; the mean and consensus columns are still there.
    by_pair: dict[str, list[int]] = defaultdict(list)
    for row in ratings:
        by_pair[row["pair_id"]].append(int(row["rating"]))
    unanimous_rows = [row for row in pairs if len(set(by_pair[row["pair_id"]])) == 1]
    assert str(unanimous.pk) in {row["pair_id"] for row in unanimous_rows}
    for row in unanimous_rows:
        assert int(row["ds_label"]) == by_pair[row["pair_id"]][0] == int(row["consensus"])
    quality = json.loads((out / "statistics.json").read_text())["rater_quality"]
    assert {r["rater"] for r in quality["raters"]} == {row["rater"] for row in ratings}
    assert all(0 <= r["quality"] <= 1 for r in quality["raters"])
    assert "Rater quality (Dawid-Skene)" in (out / "report.html").read_text()


def test_the_regression_interval_says_whether_the_paper_lies_inside(world, tmp_path):
    regression = {"n": 40, "too_few": False, "min_raters": 20, "coef_per_10_percent": 0.21, "se_per_10_percent": 0.05}
    regression |= {"ci_low_per_10_percent": 0.11, "ci_high_per_10_percent": 0.31, "p_value": 0.001, "converged": True}
    CompetencyAnalysis.objects.create(
        status=CompetencyAnalysis.Status.DONE,
        finished_at=timezone.now(),
        details={"converged": True},
        regression=regression,
    )
    out = tmp_path / "out"
    build(out, formats=("csv",), samples=2, resamples=0)
    report = (out / "report.html").read_text()
    assert "+0.210 [0.110, 0.310]" in report and "the paper's +0.17 lies inside it" in report
    assert "95% CI [0.110, 0.310]" in (out / "datasheet.md").read_text()
