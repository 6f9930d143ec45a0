"""A rater's timeline as an accessible SVG string (pure: numpy only, no Django).

Two panels over the rater's ratings in submission order (x: rating number): on top the
rolling share of exact agreement and of exact-or-adjacent agreement with the reference
(solid and dashed lines, so they differ without colour), below the seconds spent on each
rating (dots; the axis ends near the 95th percentile, at most ``seconds_cap``; slower ratings
are drawn at the top as triangles) with the delay floor
as a dashed line. A band above the panels shows the stage of each rating (its colour named in
the band's legend, so that a control rating among game ratings stays readable), and a change of
the rater's journey stage (tutorial, probation, game) is a vertical line through both panels.
Built as text: no plotting library in the web process.
"""

from collections.abc import Sequence

import numpy as np

from annotators.competency.svg import coord as _f
from annotators.competency.svg import escape as _escape
from annotators.competency.svg import svg_open

WIDTH, LEFT, RIGHT = 760, 64, 16
TOP, PANEL, GAP, BOTTOM = 52, 140, 56, 64
EXACT_COLOUR, AGREE_COLOUR, SPEED_COLOUR = "#1f5fa8", "#146c2e", "#6b4c9a"
# The stage band: a colour per stage, and each stage's name inside its run where the run is wide
# enough for it (about 6.5 px a character); every stage shown is named once in the band's legend.
STAGE_COLOURS = {
    "tutorial": "#f1d48a",
    "probation": "#f2a99f",
    "game": "#a9cbe8",
    "control": "#5b3f8c",
    "attention": "#7fbf8e",
}
BAND_TOP, BAND_HEIGHT, CHAR_WIDTH = 24, 14, 6.5
JOURNEY_STAGES = {"tutorial", "probation", "game"}


def _runs(stages: Sequence[str]) -> list[tuple[int, int, str]]:
    """(first, end, stage) of each run of equal stages."""
    runs, first = [], 0
    for i in range(1, len(stages) + 1):
        if i == len(stages) or stages[i] != stages[first]:
            runs.append((first, i, stages[first]))
            first = i
    return runs


def _stage_band(stages: Sequence[str], left: float, step: float, bottom: float) -> list[str]:
    """The band of stages, its legend, and a line at each change of the journey stage."""
    out, journey = [], None
    for first, end, stage in _runs(stages):
        x0, width = left + first * step, (end - first) * step
        colour = STAGE_COLOURS.get(stage, "#ccc")
        out.append(
            f'<rect x="{_f(x0)}" y="{BAND_TOP}" width="{_f(width)}" height="{BAND_HEIGHT}" fill="{colour}">'
            f"<title>{_escape(stage)}: ratings {first + 1} to {end}</title></rect>"
        )
        if width >= CHAR_WIDTH * len(stage) + 6 and stage != "control":
            out.append(f'<text x="{_f(x0 + 3)}" y="{BAND_TOP + 11}">{_escape(stage)}</text>')
        if stage in JOURNEY_STAGES:
            if journey is not None and stage != journey:
                out.append(
                    f'<line x1="{_f(x0)}" y1="{TOP}" x2="{_f(x0)}" y2="{_f(bottom)}" stroke="#999" '
                    'stroke-dasharray="2 2"/>'
                )
            journey = stage
    x = left
    out.append('<g class="stage-legend">')
    for stage in [s for s in STAGE_COLOURS if s in set(stages)] + sorted(set(stages) - set(STAGE_COLOURS)):
        out.append(
            f'<rect x="{_f(x)}" y="4" width="10" height="10" fill="{STAGE_COLOURS.get(stage, "#ccc")}"/>'
            f'<text x="{_f(x + 14)}" y="13">{_escape(stage)}</text>'
        )
        x += 14 + CHAR_WIDTH * len(stage) + 16
    out.append("</g>")
    return out


def _polyline(xs: np.ndarray, ys: np.ndarray, colour: str, dash: str = "") -> str:
    """One polyline per run of finite points (a NaN breaks the line)."""
    parts, current = [], []
    for x, y in zip(xs, ys, strict=True):
        if np.isfinite(y):
            current.append(f"{_f(x)},{_f(y)}")
        elif current:
            parts.append(current)
            current = []
    if current:
        parts.append(current)
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return "".join(
        f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>'
        for points in parts
    )


def _last(values: np.ndarray) -> str:
    finite = values[np.isfinite(values)]
    return f"{finite[-1]:.0%}" if finite.size else "n/a"


def timeline_svg(
    exact_share: np.ndarray,
    agreement_share: np.ndarray,
    seconds: np.ndarray,
    stages: Sequence[str],
    *,
    floor_seconds: float,
    window: int,
    seconds_cap: float = 60.0,
    title: str = "Rater timeline",
    id_prefix: str = "timeline",
) -> str:
    """The timeline figure; shares are fractions 0..1 (NaN: no compared rating yet)."""
    exact = np.asarray(exact_share, dtype=float)
    agree = np.asarray(agreement_share, dtype=float)
    secs = np.asarray(seconds, dtype=float)
    n = secs.size
    height = TOP + 2 * PANEL + GAP + BOTTOM
    plot_width = WIDTH - LEFT - RIGHT
    xs = LEFT + (np.arange(n) + 0.5) / max(n, 1) * plot_width
    top2 = TOP + PANEL + GAP
    # The seconds axis ends a little above most ratings (95th percentile), at most seconds_cap:
    # one slow rating must not squash the rest. It spans at least one step of 5 s: with no delay
    # floor and ratings of 0 s (imported ones) it would end at 0, and every point would divide by it.
    typical = float(np.quantile(secs, 0.95)) * 1.2 if n else seconds_cap
    cap = float(np.ceil(max(floor_seconds * 2, min(seconds_cap, typical), 1) / 5) * 5)

    def y_share(v: np.ndarray | float) -> np.ndarray | float:
        return TOP + (1 - np.asarray(v)) * PANEL

    def y_secs(v: np.ndarray | float) -> np.ndarray | float:
        return top2 + (1 - np.minimum(np.asarray(v), cap) / cap) * PANEL

    median = f"{np.median(secs):.1f}" if n else "n/a"
    summary = (
        f"{n} ratings in submission order. Top panel: share of exact agreement (solid) and of exact or"
        f" adjacent agreement (dashed) over the last {window} ratings compared with a reference; latest"
        f" {_last(exact)} exact, {_last(agree)} within one. Bottom panel: seconds per rating (median {median} s),"
        f" values above {cap:g} s drawn at the top as triangles; dashed line at the {floor_seconds:g} s delay floor."
    )
    out = svg_open(id_prefix, WIDTH, height, title, summary)
    # Axes and gridlines of both panels.
    for share in (0, 0.5, 1):
        yy = y_share(share)
        out.append(
            f'<line x1="{LEFT}" y1="{_f(yy)}" x2="{WIDTH - RIGHT}" y2="{_f(yy)}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{_f(yy + 4)}" text-anchor="end">{share:.0%}</text>'
        )
    for value in (0, cap / 2, cap):
        yy = y_secs(value)
        out.append(
            f'<line x1="{LEFT}" y1="{_f(yy)}" x2="{WIDTH - RIGHT}" y2="{_f(yy)}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{_f(yy + 4)}" text-anchor="end">{value:g}</text>'
        )
    for label, y0 in (("Agreement (share)", TOP), ("Seconds per rating", top2)):
        cx, cy = 16, y0 + PANEL / 2
        out.append(
            f'<text x="{cx}" y="{_f(cy)}" text-anchor="middle" transform="rotate(-90 {cx} {_f(cy)})">{label}</text>'
        )
    out.append(
        f'<text x="{_f(LEFT + plot_width / 2)}" y="{height - 16}" text-anchor="middle">'
        "Rating number (submission order)</text>"
    )
    if n:
        for tick in np.unique(np.linspace(1, n, min(n, 6)).round().astype(int)):
            xx = LEFT + (tick - 0.5) / n * plot_width
            out.append(f'<text x="{_f(xx)}" y="{height - 34}" text-anchor="middle">{tick}</text>')
        out.extend(_stage_band(stages, LEFT, plot_width / n, top2 + PANEL))
        out.append(_polyline(xs, y_share(exact), EXACT_COLOUR))
        out.append(_polyline(xs, y_share(agree), AGREE_COLOUR, "6 3"))
        floor_y = y_secs(floor_seconds)
        out.append(
            f'<line x1="{LEFT}" y1="{_f(floor_y)}" x2="{WIDTH - RIGHT}" y2="{_f(floor_y)}" stroke="#b3261e" '
            'stroke-dasharray="4 3"/>'
        )
        out.append(f'<g class="speed" fill="{SPEED_COLOUR}">')
        for x, s in zip(xs, secs, strict=True):
            yy = y_secs(s)
            if s > cap:
                out.append(f'<path d="M{_f(x - 3)},{_f(yy + 4)}L{_f(x + 3)},{_f(yy + 4)}L{_f(x)},{_f(yy - 2)}Z"/>')
            else:
                out.append(f'<circle cx="{_f(x)}" cy="{_f(yy)}" r="2"/>')
        out.append("</g>")
    else:
        out.append(
            f'<text x="{_f(LEFT + plot_width / 2)}" y="{_f(TOP + PANEL)}" text-anchor="middle">No ratings yet</text>'
        )
    # Legend.
    ly = TOP + PANEL + 22
    out.append(
        f'<g class="legend"><line x1="{LEFT}" y1="{ly}" x2="{LEFT + 24}" y2="{ly}" stroke="{EXACT_COLOUR}" '
        f'stroke-width="2"/><text x="{LEFT + 30}" y="{ly + 4}">exact agreement</text>'
        f'<line x1="{LEFT + 150}" y1="{ly}" x2="{LEFT + 174}" y2="{ly}" stroke="{AGREE_COLOUR}" stroke-width="2" '
        f'stroke-dasharray="6 3"/><text x="{LEFT + 180}" y="{ly + 4}">exact or adjacent</text>'
        f'<circle cx="{LEFT + 312}" cy="{ly}" r="2" fill="{SPEED_COLOUR}"/>'
        f'<text x="{LEFT + 320}" y="{ly + 4}">seconds per rating</text>'
        f'<line x1="{LEFT + 440}" y1="{ly}" x2="{LEFT + 464}" y2="{ly}" stroke="#b3261e" stroke-dasharray="4 3"/>'
        f'<text x="{LEFT + 470}" y="{ly + 4}">delay floor</text></g>'
    )
    out.append("</svg>")
    return "".join(out)
