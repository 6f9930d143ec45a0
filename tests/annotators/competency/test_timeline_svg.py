"""The staff timeline's stage band: every stage readable, however short its runs."""

import itertools
import re
import xml.etree.ElementTree as ET

import numpy as np

from annotators.competency.timeline_svg import CHAR_WIDTH, timeline_svg

SVG = "{http://www.w3.org/2000/svg}"


def drawn(stages: list[str]) -> ET.Element:
    n = len(stages)
    share = np.linspace(0.4, 0.8, n)
    svg = timeline_svg(share, share, np.full(n, 8.0), stages, floor_seconds=3, window=20, title="Timeline")
    return ET.fromstring(svg)  # noqa: S314 (the project's own drawing, not untrusted input)


def texts(root: ET.Element) -> list[tuple[float, float, str]]:
    return [(float(t.get("x", 0)), float(t.get("y", 0)), t.text or "") for t in root.iter(f"{SVG}text")]


def test_a_control_among_game_ratings_leaves_no_label_over_another():
    # The walk's rater: a tutorial, a game run, one control, two game ratings, one control.
    stages = ["tutorial"] * 10 + ["game"] * 8 + ["control"] + ["game"] * 2 + ["control"]
    root = drawn(stages)
    band = sorted((x, x + CHAR_WIDTH * len(text), text) for x, y, text in texts(root) if 20 <= y <= 40)
    assert [text for *_, text in band] == ["tutorial", "game", "game"]  # a control is named by its colour
    assert all(end <= start for (_, end, _), (start, _, _) in itertools.pairwise(band))
    legend = root.find(f".//{SVG}g[@class='stage-legend']")
    assert [t.text for t in legend.iter(f"{SVG}text")] == ["tutorial", "game", "control"]
    runs = [r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert runs == [
        "tutorial: ratings 1 to 10",
        "game: ratings 11 to 18",
        "control: ratings 19 to 19",
        "game: ratings 20 to 21",
        "control: ratings 22 to 22",
    ]


def test_a_run_too_narrow_for_its_name_is_named_by_the_legend_alone():
    stages = ["game"] * 60 + ["probation"] + ["game"] * 60
    band = [text for x, y, text in texts(drawn(stages)) if 20 <= y <= 40]
    assert band == ["game", "game"]


def test_a_line_marks_each_change_of_the_journey_stage_not_each_control():
    stages = ["tutorial"] * 10 + ["probation"] * 20 + ["game"] * 9 + ["control"] + ["game"] * 9 + ["control"]
    svg = ET.tostring(drawn(stages), encoding="unicode")
    assert len(re.findall(r'stroke-dasharray="2 2"', svg)) == 2  # tutorial to probation, probation to game


def test_ratings_of_no_seconds_without_a_delay_floor_are_drawn_on_an_axis_of_five_seconds():
    stages = ["game"] * 4
    svg = timeline_svg(np.full(4, 0.5), np.full(4, 0.5), np.zeros(4), stages, floor_seconds=0, window=20)
    assert "nan" not in svg
    root = ET.fromstring(svg)  # noqa: S314 (the project's own drawing, not untrusted input)
    assert [text for x, y, text in texts(root) if text in {"0", "2.5", "5"}] == ["0", "2.5", "5"]
