"""Accessible SVG written as text, for the competency pictures (the Wright map, a rater's timeline).

Pure: no Django, and no plotting library in the web process. ``svg_open`` starts a picture that
screen readers announce by its title and description (``role="img"``, ``aria-labelledby``);
every text goes through ``escape`` and every coordinate through ``coord``.
"""

from xml.sax.saxutils import escape as _xml_escape


def escape(text: object) -> str:
    """Text for an XML text node or a double-quoted attribute."""
    return _xml_escape(str(text), {'"': "&quot;"})


def coord(value: float) -> str:
    """A coordinate or a length, to a tenth of a unit."""
    return f"{value:.1f}"


def svg_open(id_prefix: str, width: float, height: float, title: str, description: str) -> list[str]:
    """The opening tag, title and description of a picture ``width`` x ``height``; close it with "</svg>"."""
    size = f'width="{coord(width)}" height="{coord(height)}" viewBox="0 0 {coord(width)} {coord(height)}"'
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" {size} role="img" '
        f'aria-labelledby="{id_prefix}-title {id_prefix}-desc" font-family="sans-serif" font-size="11">',
        f'<title id="{id_prefix}-title">{escape(title)}</title>',
        f'<desc id="{id_prefix}-desc">{escape(description)}</desc>',
    ]
