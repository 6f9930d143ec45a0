"""The Wright map of the VICR paper's Figure 3, as an accessible SVG string.

Rater competency and pair difficulty thresholds share one vertical axis in logits (Wright
& Stone 1979, "Best Test Design"). From left to right: the latent regression's predicted
mean competency for tutorial scores of 50% to 100% (optional), the histogram of rater
competency, the logit axis, then one column per pair with its AA threshold (orange circle)
and its EA threshold (red square; shape as well as colour, for colour-blind readers),
pairs sorted ascending by EA threshold. Control pairs (the expert-rated pairs every rater meets
in the game, as the paper's validation study had) are always drawn, on a shaded band. Built as
text: no plotting library in the web process.
"""

import re
from collections.abc import Sequence

import numpy as np

from annotators.competency.pcm import rubric_score, rubric_scores
from annotators.competency.svg import coord as _f
from annotators.competency.svg import escape as _escape
from annotators.competency.svg import svg_open

__all__ = ["rubric_score", "rubric_scores", "wright_map_svg"]

AA_COLOUR = "#e67e00"
EA_COLOUR = "#c0392b"
CONTROL_BAND = "#dde8f5"
PLOT_HEIGHT = 360
TOP, BOTTOM = 56, 96
REGRESSION_WIDTH, HISTOGRAM_WIDTH, AXIS_WIDTH = 96, 150, 56
COLUMN_WIDTH = 14
TRAINING_SCORES = (50, 60, 70, 80, 90, 100)


def _shown_items(key: np.ndarray, max_items: int, always: np.ndarray) -> tuple[np.ndarray, int]:
    """Items sorted by key: every ``always`` item, and of the others at most what max_items leaves,
    evenly spaced in rank (keeps both ends)."""
    finite = np.isfinite(key)
    order = np.flatnonzero(finite & ~always)
    order = order[np.argsort(key[order], kind="stable")]
    room = max(max_items - int(np.sum(finite & always)), 2)
    if order.size > room:
        order = order[np.unique(np.round(np.linspace(0, order.size - 1, room)).astype(int))]
    order = np.concatenate([order, np.flatnonzero(finite & always)])
    return order[np.argsort(key[order], kind="stable")], int(finite.sum())


def wright_map_svg(
    abilities: np.ndarray,
    thresholds: np.ndarray,
    item_labels: Sequence[str] | None = None,
    regression: dict | None = None,
    *,
    controls: Sequence[bool] | None = None,
    max_items: int = 50,
    threshold_kind: str = "Thurstonian",
    title: str = "Wright map of rater competency and pair difficulty",
    id_prefix: str = "wright-map",
) -> str:
    """Draw the Wright map; see the module docstring for its layout.

    abilities: rater competencies (NaN ignored). thresholds: items x 2 (AA, EA) in logits,
    for the paper's "50% chance" reading pass ``thurstonian_thresholds(result.thresholds)``
    (threshold_kind only names them in the text). regression: the dict of
    ``latent_regression``. With more than max_items pairs, max_items are drawn, evenly
    spaced in EA-threshold rank, and the description says how many. controls: per item, whether
    it is a control pair (always drawn, on a shaded band).
    """
    ability = np.asarray(abilities, dtype=float)
    ability = ability[np.isfinite(ability)]
    steps = np.asarray(thresholds, dtype=float).reshape(-1, 2)
    labels = [str(label) for label in item_labels] if item_labels is not None else None
    if labels is not None and len(labels) != steps.shape[0]:
        raise ValueError("item_labels must have one label per item")
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", id_prefix) or "wright-map"

    # Items without an EA threshold (EA never observed in the data) sort by their AA one.
    key = np.where(np.isfinite(steps[:, 1]), steps[:, 1], steps[:, 0])
    is_control = np.zeros(steps.shape[0], dtype=bool) if controls is None else np.asarray(controls, dtype=bool)
    shown, total = _shown_items(key, max_items, is_control)
    predictions = []
    if regression is not None:
        predictions = [(s, regression["intercept"] + regression["coef_per_percent"] * s) for s in TRAINING_SCORES]

    values = np.concatenate([ability, steps[shown].ravel(), [p for _, p in predictions]])
    values = values[np.isfinite(values)]
    low, high = (float(values.min()), float(values.max())) if values.size else (-1.0, 1.0)
    low, high = np.floor(low - 0.25), np.ceil(high + 0.25)
    span = high - low

    def y(logit: float) -> float:
        return TOP + (high - logit) / span * PLOT_HEIGHT

    x_regression = 12.0
    x_histogram = x_regression + (REGRESSION_WIDTH if predictions else 0)
    x_axis = x_histogram + HISTOGRAM_WIDTH
    x_items = x_axis + AXIS_WIDTH
    width = x_items + max(len(shown), 1) * COLUMN_WIDTH + 24
    height = TOP + PLOT_HEIGHT + BOTTOM
    few_labels = labels is not None and len(shown) <= 30
    if few_labels:
        height += 60

    median = f"{np.median(ability):.2f}" if ability.size else "n/a"
    summary = (
        f"{ability.size} raters, median competency {median} logits. "
        f"Showing {len(shown)} of {total} pairs, sorted ascending by EA threshold"
        + (", evenly spaced in rank." if len(shown) < total else ".")
        + f" {threshold_kind} thresholds: AA in orange circles, EA in red squares."
        + (f" {int(is_control[shown].sum())} control pairs on a shaded band." if is_control.any() else "")
    )
    if regression is not None:
        summary += (
            f" Latent regression: {regression['coef_per_10_percent']:+.2f} logits per 10% of tutorial score"
            f" (SE {regression['se_per_10_percent']:.2f}, n = {regression['n']}); predicted means for"
            " tutorial scores of 50% to 100% in the first column."
        )

    out = [
        *svg_open(prefix, width, height, title, summary),
        f'<text x="{_f(width / 2)}" y="20" text-anchor="middle" font-size="14">{_escape(title)}</text>',
    ]

    # Logit axis with a tick per whole logit (or per few logits on a wide range).
    tick = 1 if span <= 10 else int(np.ceil(span / 10))
    out.append(
        f'<g class="axis"><line x1="{_f(x_axis)}" y1="{_f(TOP)}" x2="{_f(x_axis)}" '
        f'y2="{_f(TOP + PLOT_HEIGHT)}" stroke="#000"/>'
    )
    for logit in np.arange(low, high + 1e-9, tick):
        yy = y(logit)
        out.append(
            f'<line x1="{_f(x_axis)}" y1="{_f(yy)}" x2="{_f(x_axis + 5)}" y2="{_f(yy)}" stroke="#000"/>'
            f'<text x="{_f(x_axis + 8)}" y="{_f(yy + 4)}">{logit:g}</text>'
        )
    label_x, label_y = x_axis + 42, TOP + PLOT_HEIGHT / 2
    out.append(
        f'<text x="{_f(label_x)}" y="{_f(label_y)}" text-anchor="middle" '
        f'transform="rotate(-90 {_f(label_x)} {_f(label_y)})">Competency and difficulty (logits)</text></g>'
    )

    # Histogram of rater competency, bars growing leftwards from the axis (as in Figure 3).
    out.append('<g class="histogram">')
    if ability.size:
        width_bin = 0.25 if span <= 10 else span / 40
        edges = np.arange(low, high + width_bin / 2, width_bin)
        counts, _ = np.histogram(ability, bins=edges)
        longest = HISTOGRAM_WIDTH - 16
        for count, lo_edge, hi_edge in zip(counts, edges[:-1], edges[1:], strict=True):
            if count == 0:
                continue
            length = count / counts.max() * longest
            out.append(
                f'<rect class="histogram-bar" x="{_f(x_axis - 4 - length)}" y="{_f(y(hi_edge) + 0.5)}" '
                f'width="{_f(length)}" height="{_f(y(lo_edge) - y(hi_edge) - 1)}" fill="#5b7fa6">'
                f"<title>{count} raters from {lo_edge:.2f} to {hi_edge:.2f} logits</title></rect>"
            )
    out.append(
        f'<text x="{_f(x_histogram + HISTOGRAM_WIDTH / 2)}" y="{_f(TOP + PLOT_HEIGHT + 20)}" '
        'text-anchor="middle">Raters</text></g>'
    )

    # Latent regression: predicted mean competency by tutorial score.
    if predictions:
        x_line = x_regression + REGRESSION_WIDTH - 20
        out.append(
            f'<g class="regression"><line x1="{_f(x_line)}" y1="{_f(TOP)}" x2="{_f(x_line)}" '
            f'y2="{_f(TOP + PLOT_HEIGHT)}" stroke="#888"/>'
        )
        # 50% and 100% always carry a text label, the others only where they do not overlap.
        labelled = [y(predictions[0][1]), y(predictions[-1][1])]
        for index, (score, predicted) in enumerate(predictions):
            yy = y(predicted)
            label = index in (0, len(predictions) - 1) or min(abs(yy - other) for other in labelled) >= 12
            if label and index not in (0, len(predictions) - 1):
                labelled.append(yy)
            text = f'<text x="{_f(x_line - 9)}" y="{_f(yy + 4)}" text-anchor="end">{score}%</text>' if label else ""
            out.append(
                f'<g class="prediction"><title>Tutorial score {score}%: predicted mean competency '
                f"{predicted:.2f} logits</title>"
                f'<line x1="{_f(x_line - 6)}" y1="{_f(yy)}" x2="{_f(x_line + 6)}" y2="{_f(yy)}" stroke="#000"/>'
                f"{text}</g>"
            )
        # As in Figure 3: a solid line at the 50% prediction, a dashed one at 100%.
        for (_, predicted), dash in ((predictions[0], ""), (predictions[-1], ' stroke-dasharray="4 3"')):
            out.append(
                f'<line x1="{_f(x_line)}" y1="{_f(y(predicted))}" x2="{_f(width - 12)}" '
                f'y2="{_f(y(predicted))}" stroke="#000" stroke-width="0.8"{dash}/>'
            )
        out.append(
            f'<text x="{_f(x_regression + REGRESSION_WIDTH / 2 - 8)}" y="{_f(TOP + PLOT_HEIGHT + 20)}" '
            'text-anchor="middle">Tutorial score</text></g>'
        )

    # One column per shown pair.
    out.append('<g class="items">')
    for column, item in enumerate(shown):
        cx = x_items + (column + 0.5) * COLUMN_WIDTH
        aa, ea = steps[item]
        name = labels[item] if labels is not None else f"Pair {item + 1}"
        parts = [f"{name}:"]
        if np.isfinite(aa):
            parts.append(f"AA threshold {aa:.2f}")
        if np.isfinite(ea):
            parts.append(f"EA threshold {ea:.2f}")
        out.append(f'<g class="item"><title>{_escape(" ".join(parts))}</title>')
        if is_control[item]:
            out.append(
                f'<rect class="control-band" x="{_f(cx - COLUMN_WIDTH / 2)}" y="{_f(TOP)}" '
                f'width="{_f(COLUMN_WIDTH)}" height="{_f(PLOT_HEIGHT)}" fill="{CONTROL_BAND}"/>'
            )
        if np.isfinite(aa):
            out.append(f'<circle class="threshold aa" cx="{_f(cx)}" cy="{_f(y(aa))}" r="3.5" fill="{AA_COLOUR}"/>')
        if np.isfinite(ea):
            out.append(
                f'<rect class="threshold ea" x="{_f(cx - 3.5)}" y="{_f(y(ea) - 3.5)}" width="7" height="7" '
                f'fill="{EA_COLOUR}"/>'
            )
        if few_labels:
            lx, ly = cx, TOP + PLOT_HEIGHT + 10
            out.append(
                f'<text class="item-label" x="{_f(lx)}" y="{_f(ly)}" text-anchor="end" font-size="9" '
                f'transform="rotate(-60 {_f(lx)} {_f(ly)})">{_escape(name)}</text>'
            )
        out.append("</g>")
    caption_y = TOP + PLOT_HEIGHT + (76 if few_labels else 20)
    out.append(
        f'<text x="{_f(x_items)}" y="{_f(caption_y)}">Pairs by EA threshold '
        f"(showing {len(shown)} of {total})</text></g>"
    )

    # Legend.
    legend_y = height - 30
    out.append(
        f'<g class="legend"><circle cx="{_f(x_histogram + 6)}" cy="{_f(legend_y)}" r="3.5" fill="{AA_COLOUR}"/>'
        f'<text x="{_f(x_histogram + 14)}" y="{_f(legend_y + 4)}">AA threshold (at least adjacent agreement)</text>'
        f'<rect x="{_f(x_histogram + 2.5)}" y="{_f(legend_y + 14.5)}" width="7" height="7" fill="{EA_COLOUR}"/>'
        f'<text x="{_f(x_histogram + 14)}" y="{_f(legend_y + 22)}">EA threshold (exact agreement)</text>'
    )
    if is_control.any():
        x_band = x_histogram + (560 if predictions else 300)
        out.append(
            f'<rect x="{_f(x_band)}" y="{_f(legend_y - 6)}" width="10" height="28" fill="{CONTROL_BAND}"/>'
            f'<text x="{_f(x_band + 16)}" y="{_f(legend_y + 4)}">Control pair (rated by experts,</text>'
            f'<text x="{_f(x_band + 16)}" y="{_f(legend_y + 18)}">met by every rater in the game)</text>'
        )
    if predictions:
        x_lines = x_histogram + 300
        out.append(
            f'<line x1="{_f(x_lines)}" y1="{_f(legend_y)}" x2="{_f(x_lines + 20)}" y2="{_f(legend_y)}" stroke="#000"/>'
            f'<text x="{_f(x_lines + 26)}" y="{_f(legend_y + 4)}">Predicted mean competency, 50% tutorial score</text>'
            f'<line x1="{_f(x_lines)}" y1="{_f(legend_y + 18)}" x2="{_f(x_lines + 20)}" y2="{_f(legend_y + 18)}" '
            'stroke="#000" stroke-dasharray="4 3"/>'
            f'<text x="{_f(x_lines + 26)}" y="{_f(legend_y + 22)}">'
            "Predicted mean competency, 100% tutorial score</text>"
        )
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)
