"""``{% pair_img image sizes=... alt=... %}``: a pair image as an ``<img>`` of its display copies.

The browser picks the copy that fits the slot (``srcset`` and ``sizes``), so a phone downloads
the 480-px copy and a laptop the 1024-px one; ``width``/``height`` reserve the space before it
arrives. See ``ratinggame.pairs.derivatives``.
"""

from django import template
from django.utils.html import format_html, format_html_join

from ratinggame.models import Image
from ratinggame.pairs.derivatives import display_image

register = template.Library()


@register.simple_tag
def pair_img(image: Image, *, sizes: str = "100vw", thumb: bool = False, **attrs: str) -> str:
    """``thumb``: the smallest copy alone (lists of small previews)."""
    shown = display_image(image)
    if thumb:
        source = format_html('src="{}"', shown.thumb)
    elif shown.srcset:
        source = format_html('src="{}" srcset="{}" sizes="{}"', shown.src, shown.srcset, sizes)
    else:
        source = format_html('src="{}"', shown.src)
    extra = format_html_join(" ", '{}="{}"', ((name.replace("_", "-"), value) for name, value in attrs.items()))
    return format_html('<img {} width="{}" height="{}" {}>', source, shown.width, shown.height, extra)
