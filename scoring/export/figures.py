"""Inline SVG figures of the export report (no Django import, no plotting library).

The report must be one self-contained HTML file, so the figures are small hand-written SVG:
each has role="img", a <title> and a <desc> (read by screen readers), and every value is also
in a table next to it. All text is escaped here, so the result can be inserted as it is.
"""

from collections.abc import Mapping
from html import escape

# ColorBrewer RdYlBu (5 classes): ordinal, colour-blind safe; 1 (red) .. 5 (blue).
LEVEL_COLOURS = ("#d7191c", "#fdae61", "#ffffbf", "#abd9e9", "#2c7bb6")
_FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def _frame(figure_id: str, width: int, height: int, title: str, desc: str, body: list[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-labelledby="{figure_id}-title {figure_id}-desc" {_FONT}>'
        f'<title id="{figure_id}-title">{escape(title)}</title><desc id="{figure_id}-desc">{escape(desc)}</desc>'
    )
    return head + "".join(body) + "</svg>"


def distribution_bars_svg(counts: Mapping[str, int], *, figure_id: str, title: str) -> str:
    """Vertical bars: pairs per rounded mean rating 1..5, counts written above the bars."""
    width, height, left, bottom, top = 420, 260, 48, 40, 24
    plot_height = height - bottom - top
    levels = list(counts)
    largest = max(max(counts.values(), default=0), 1)
    total = sum(counts.values())
    desc = "; ".join(f"rating {level}: {counts[level]} pairs" for level in levels) + f"; {total} pairs in all."
    slot = (width - left - 12) / max(len(levels), 1)
    body = [
        f'<line x1="{left}" y1="{top + plot_height}" x2="{width - 12}" y2="{top + plot_height}" stroke="#1b1b1f"/>',
        f'<text x="{(left + width) / 2:.0f}" y="{height - 6}" text-anchor="middle">Rounded mean rating</text>',
        f'<text x="12" y="{top + plot_height / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + plot_height / 2:.0f})">Pairs</text>',
    ]
    for index, level in enumerate(levels):
        bar_height = plot_height * counts[level] / largest
        x = left + index * slot + slot * 0.15
        y = top + plot_height - bar_height
        colour = LEVEL_COLOURS[index % len(LEVEL_COLOURS)]
        body.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{bar_height:.1f}" '
            f'fill="{colour}" stroke="#1b1b1f"><title>rating {escape(level)}: {counts[level]} pairs</title></rect>'
        )
        centre = x + slot * 0.35
        body.append(f'<text x="{centre:.1f}" y="{y - 4:.1f}" text-anchor="middle">{counts[level]}</text>')
        body.append(f'<text x="{centre:.1f}" y="{top + plot_height + 16}" text-anchor="middle">{escape(level)}</text>')
    return _frame(figure_id, width, height, title, desc, body)


def source_shares_svg(per_source: Mapping[str, Mapping[str, int]], *, figure_id: str, title: str) -> str:
    """One 100% stacked horizontal bar per caption source: the share of each rounded rating."""
    label_width, bar_width, row, top = 110, 380, 30, 34
    width = label_width + bar_width + 20
    height = top + row * max(len(per_source), 1) + 10
    body = []
    # Legend: one swatch per level.
    for index, colour in enumerate(LEVEL_COLOURS):
        x = label_width + index * 70
        body.append(f'<rect x="{x}" y="6" width="14" height="14" fill="{colour}" stroke="#1b1b1f"/>')
        body.append(f'<text x="{x + 20}" y="18">rating {index + 1}</text>')
    descriptions = []
    for position, (source, counts) in enumerate(per_source.items()):
        total = sum(counts.values())
        y = top + position * row
        body.append(f'<text x="{label_width - 8}" y="{y + 16}" text-anchor="end">{escape(source)}</text>')
        x = float(label_width)
        parts = []
        for index, (level, count) in enumerate(counts.items()):
            share = count / total if total else 0.0
            parts.append(f"rating {level} {share:.0%}")
            if not count:
                continue
            segment = bar_width * share
            colour = LEVEL_COLOURS[index % len(LEVEL_COLOURS)]
            body.append(
                f'<rect x="{x:.1f}" y="{y}" width="{segment:.1f}" height="22" fill="{colour}" stroke="#ffffff">'
                f"<title>{escape(source)}, rating {escape(level)}: {count} of {total} pairs ({share:.0%})</title>"
                "</rect>"
            )
            x += segment
        descriptions.append(f"{source} ({total} pairs): " + ", ".join(parts))
    desc = "; ".join(descriptions) + "." if descriptions else "No pairs."
    return _frame(figure_id, width, height, title, desc, body)
