"""The rating loop's links reversed once per process (ratinggame.links): the same text as Django's
``reverse``, whatever the id and the script prefix."""

import pytest
from django.urls import NoReverseMatch, clear_script_prefix, reverse, set_script_prefix

from ratinggame.links import fixed_url, url_of


@pytest.mark.parametrize("prefix", ["/", "/study/"])
def test_each_link_is_what_reverse_gives(prefix):
    set_script_prefix(prefix)
    try:
        for pk in (1, 7, 10, 918273, 2**40):
            assert url_of("feedback", pk=pk) == reverse("feedback", args=[pk])
            assert url_of("dispute", pk=pk) == reverse("dispute", args=[pk])
            for stage in ("tutorial", "probation", "game"):
                assert url_of("rate_pair", stage, pk=pk) == reverse("rate_pair", args=[stage, pk])
        assert fixed_url("annotators:play") == reverse("annotators:play")
        assert url_of("feedback", pk=5).startswith(prefix)
    finally:
        clear_script_prefix()


def test_a_route_without_an_id_is_refused_as_reverse_refuses_it():
    with pytest.raises(NoReverseMatch):
        url_of("annotators:play", pk=3)
