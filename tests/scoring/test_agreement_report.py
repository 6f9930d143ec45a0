"""`manage.py agreement_report`: the export's agreement statistics for an external rating file."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from scoring.agreement import virtual_rater_report
from scoring.rating_files import read_ratings_file
from tests.shared_data import VICR_SAMPLE

needs_sample = pytest.mark.skipif(not VICR_SAMPLE.is_file(), reason="VICR sample not at hand (../shared/external)")


def run(*arguments) -> dict:
    out = io.StringIO()
    call_command("agreement_report", *map(str, arguments), stdout=out)
    return json.loads(out.getvalue())


@needs_sample
def test_vicr_sample_wide_gives_the_library_numbers():
    result = run(VICR_SAMPLE, "--format", "wide")
    direct = virtual_rater_report(read_ratings_file(VICR_SAMPLE, "wide"), samples=100, seed=0)
    assert result["pairs"] == 249
    assert result["agreement"] == direct
    assert result["agreement"]["pairs_used"] == 249 and result["agreement"]["pairs_left_out"] == 0
    # The file's num_ratings column sums to the ratings counted (3 to 7 per pair).
    assert result["ratings"] == sum(len(v) for v in read_ratings_file(VICR_SAMPLE, "wide").values())
    assert sum(result["rating_distribution"].values()) == 249
    assert result["paper_table3"]["VICR"]["kendall_w"] == 93.8


@needs_sample
def test_seed_and_samples_are_passed_through_and_out_writes_the_same_json(tmp_path):
    target = tmp_path / "report.json"
    arguments = ("--format", "wide", "--samples", "7", "--seed", "3", "--out", str(target))
    call_command("agreement_report", str(VICR_SAMPLE), *arguments, stderr=io.StringIO())
    written = json.loads(target.read_text())
    assert written == run(VICR_SAMPLE, "--format", "wide", "--samples", 7, "--seed", 3)
    assert written["agreement"] == virtual_rater_report(read_ratings_file(VICR_SAMPLE, "wide"), samples=7, seed=3)
    assert written["agreement"] != run(VICR_SAMPLE, "--format", "wide", "--samples", 7, "--seed", 4)["agreement"]


def test_long_format(tmp_path):
    # Four pairs; ratings chosen so the rounded means are 1, 3 (2.5 rounds up), 4 and 5.
    rows = {"a": [1, 1, 2], "b": [2, 3, 3, 2], "c": [4, 4, 5], "d": [5, 5, 5, 4, 5]}
    path = tmp_path / "long.csv"
    lines = ["pair_id,rating,rater_id"]
    lines += [f"{pair},{value},r{i}" for pair, values in rows.items() for i, value in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    result = run(path, "--format", "long", "--samples", 20)
    assert result["pairs"] == 4 and result["ratings"] == 15
    assert result["agreement"] == virtual_rater_report(rows, samples=20, seed=0)
    assert result["rating_distribution"] == {"1": 1, "2": 0, "3": 1, "4": 1, "5": 1}


@pytest.mark.parametrize(
    ("content", "fmt", "message"),
    [
        ("pair_id,rating\na,3\na,4\na,6\n", "long", "row 4"),  # rating off the scale
        ("pair_id,rating\na,3\nb,x\n", "long", "row 3"),  # not a number
        ("pair,score\na,3\n", "long", "missing column"),
        ("image,caption,rating,rating_2,rating_3\ni,c,3,4,3.5\n", "wide", "row 2"),
        ("image,caption,rating,rating_2,rating_3\ni,c,3,4,3\ni,c,3,3,3\n", "wide", "row 3"),  # pair listed twice
        ("pair_id,rating\na,3\na,4\na,5\n", "long", "at least 2 pairs"),  # too little to compare
    ],
)
def test_bad_files_name_the_row(tmp_path, content, fmt, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(CommandError, match=message) as raised:
        call_command("agreement_report", str(path), "--format", fmt)
    assert "bad.csv" in str(raised.value)


def test_missing_file_and_bad_samples(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("agreement_report", str(tmp_path / "nope.csv"))
    path = tmp_path / "ok.csv"
    path.write_text("pair_id,rating\na,3\n")
    with pytest.raises(CommandError, match="--samples"):
        call_command("agreement_report", str(path), "--samples", "0")


def test_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("pair_id,rating\nré,3\n".encode("latin-1"))
    with pytest.raises(CommandError, match="line 2"):
        call_command("agreement_report", str(path))


@needs_sample
def test_vicr_sample_intervals_all_ratings_and_the_paper_beside_them():
    result = run(VICR_SAMPLE, "--format", "wide", "--resamples", 500)
    agreement = result["agreement"]
    assert agreement["resamples"] == 500 and result["too_few"] is False
    comparison = result["paper_comparison"]["VICR"]
    for statistic, figure in {"tau_X_YZ": 75.6, "tau_Y_XZ": 77.8, "kendall_w": 93.8, "fleiss_kappa": 58.1}.items():
        low, high = agreement[statistic]["ci_low"], agreement[statistic]["ci_high"]
        assert comparison[statistic] == {"paper": figure, "inside": low <= figure <= high}
    # τ_X-YZ 75.6 and κ 58.1 fall inside the sample's intervals; Y's 77.8 is above its interval.
    assert comparison["tau_X_YZ"]["inside"] and comparison["fleiss_kappa"]["inside"]
    assert comparison["tau_Y_XZ"]["inside"] is False
    everything = result["agreement_all_ratings"]
    assert everything["pairs"] == 249 and everything["icc1k"]["ci_low"] < everything["icc1k"]["value"]


def test_a_small_file_is_flagged_too_few(tmp_path):
    path = tmp_path / "small.csv"
    path.write_text("pair_id,rating\n" + "".join(f"p{i},{v}\n" for i in range(5) for v in (2, 3, 3 + i % 3)))
    result = run(path, "--resamples", 50)
    assert result["too_few"] is True and result["agreement"]["pairs_used"] == 5
