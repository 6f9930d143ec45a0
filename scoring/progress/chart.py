"""Ratings per hour as an accessible SVG string (pure: no Django, no plotting library).

One bar per hour, oldest on the left: the game ratings that count (they build the dataset) at
the bottom, the other ratings (tutorial, probation, excluded) stacked above them in a lighter
colour; a label under each midnight (UTC). The title and description say in words what the bars
show, for screen readers; the page puts the legend beside it (readable at any width). The page
sets its width; the picture scales with its viewBox.
"""

from collections.abc import Sequence
from datetime import datetime, timedelta
from html import escape

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 16, 44
COUNTED_COLOUR, OTHER_COLOUR, GRID_COLOUR = "#0b57d0", "#a9aebb", "#dde0e6"
# A day's label ("03 Dec") at 15 px is about 50 px wide: centred under its midnight, or ending at
# the picture's edge where centring would cut it.
LABEL_HALF_WIDTH = 26


def _nice_ceiling(value: int) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``value`` (at least 1)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if factor * step >= value:
                return factor * step
        step *= 10


def _f(value: float) -> str:
    return f"{value:.1f}"


def _day_label(x: float, text: str) -> str:
    y = HEIGHT - BOTTOM + 20
    if x + LABEL_HALF_WIDTH > WIDTH:
        return f'<text x="{WIDTH - 1}" y="{y}" text-anchor="end">{text}</text>'
    return f'<text x="{_f(x)}" y="{y}" text-anchor="middle">{text}</text>'


def ratings_per_hour_svg(
    *,
    start: datetime,
    counted: Sequence[int],
    other: Sequence[int],
    title: str = "Ratings per hour",
    id_prefix: str = "rate-chart",
) -> str:
    """The chart of ``counted`` and ``other`` ratings in the hours from ``start`` (UTC), one
    value per hour, oldest first."""
    hours = len(counted)
    totals = [c + o for c, o in zip(counted, other, strict=True)]
    top = _nice_ceiling(max(totals, default=0))
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bar = plot_width / max(hours, 1)
    days = hours / 24

    def y(value: float) -> float:
        return TOP + plot_height * (1 - value / top)

    busiest = max(range(hours), key=lambda i: totals[i], default=None)
    summary = (
        f"Ratings submitted in each hour of the last {days:g} days (UTC), oldest on the left: "
        f"{sum(counted)} game ratings that count (dark bars) and {sum(other)} other ratings "
        "(tutorial, probation or excluded; light bars stacked above)."
    )
    if busiest is not None and totals[busiest]:
        moment = start + timedelta(hours=busiest)
        summary += f" The busiest hour, {moment:%d %b %H}:00, had {totals[busiest]}."
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-labelledby="{id_prefix}-title {id_prefix}-desc" font-family="sans-serif" font-size="15">',
        f'<title id="{id_prefix}-title">{escape(title)}</title>',
        f'<desc id="{id_prefix}-desc">{escape(summary)}</desc>',
    ]
    for value in (0, top / 2, top):
        out.append(
            f'<line x1="{LEFT}" y1="{_f(y(value))}" x2="{WIDTH - RIGHT}" y2="{_f(y(value))}" stroke="{GRID_COLOUR}"/>'
            f'<text x="{LEFT - 6}" y="{_f(y(value) + 4)}" text-anchor="end">{value:g}</text>'
        )
    for i in range(hours):
        x = LEFT + i * bar
        moment = start + timedelta(hours=i)
        if moment.hour == 0:
            out.append(
                f'<line x1="{_f(x)}" y1="{TOP}" x2="{_f(x)}" y2="{HEIGHT - BOTTOM + 4}" stroke="#80838f"/>'
                + _day_label(x, f"{moment:%d %b}")
            )
        if counted[i]:
            out.append(
                f'<rect x="{_f(x)}" y="{_f(y(counted[i]))}" width="{_f(bar)}" '
                f'height="{_f(y(0) - y(counted[i]))}" fill="{COUNTED_COLOUR}"/>'
            )
        if other[i]:
            out.append(
                f'<rect x="{_f(x)}" y="{_f(y(totals[i]))}" width="{_f(bar)}" '
                f'height="{_f(y(counted[i]) - y(totals[i]))}" fill="{OTHER_COLOUR}"/>'
            )
    out.append(
        f'<text x="{_f(LEFT + plot_width / 2)}" y="{HEIGHT - 4}" text-anchor="middle">Hour (UTC), one bar each</text>'
    )
    out.append("</svg>")
    return "".join(out)
