"""The rating loop's links, reversed once per process.

Django's ``reverse`` walks the URL resolver on every call, about 50 µs each here, and the rating
page's one request (``ratinggame.play``) names four URLs per rating. A route whose last part is
a whole-number id is the same text around any id, so its two sides are reversed once (per script
prefix) and the id goes between them; ``reverse`` itself stays the one source of each URL. No
library caches ``reverse``: this is the smallest memo that keeps its answers.
"""

import functools

from django.urls import get_script_prefix, reverse

# An id no route's own text holds: the place of the id in a reversed URL.
_MARK = 918273645546372819


@functools.cache
def _around_id(name: str, prefix: str, args: tuple) -> tuple[str, str]:
    head, mark, tail = reverse(name, args=[*args, _MARK]).partition(str(_MARK))
    if not mark or str(_MARK) in tail:
        raise ValueError(f"{name}: its id is not one place in its URL")
    return head, tail


@functools.cache
def _fixed(name: str, prefix: str) -> str:
    return reverse(name)


def url_of(name: str, *args, pk: int) -> str:
    """``reverse(name, args=[*args, pk])`` for a route that ends in a whole-number id."""
    head, tail = _around_id(name, get_script_prefix(), args)
    return f"{head}{int(pk)}{tail}"


def fixed_url(name: str) -> str:
    """``reverse(name)`` for a route without arguments."""
    return _fixed(name, get_script_prefix())
