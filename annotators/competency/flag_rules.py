"""The rater behaviour flags of the staff dashboard: one entry per flag (pure: no Django).

A flag is a prompt to look at a rater, never an automatic sanction. Each entry holds its key,
its label, the thresholds it reads with their defaults (``ratinggame.settings`` reads each from
the environment variable ``RATINGGAME_FLAG_<NAME>``), the rule, and the rule in words for the
dashboard (a format string over the thresholds). A new flag is one more entry here, and the
statistic it reads on ``annotators.competency.flags.RaterStats``.

Why these defaults: the delay floor is 3 s and reading a caption against an image takes
longer, so a median under 5 s or half the ratings at the floor is not reading; a rater picking
at random agrees exactly or adjacently with a consensus of 3 about 60% of the time (3 of 5
values), and less for consensus 1 or 5, so below 70% is close to chance. An honest rater
agrees with a model prime only as often as the model agrees with people; where the primes are
good, an honest rater matches them often, and matches the people's consensus just as often. A
copier matches the prime every time but the consensus only as often as the model does, so the
flag needs both: the prime matched at least 80% of the time, and 25 points more often than the
consensus of the same pairs. On the control pairs (experts' ratings), always answering 3 scores
a mean agreement of 0.8 (exact 2, adjacent 1, otherwise 0) on a set balanced over the five
levels, a uniform random clicker about 0.7, and the median rater of a VICR-like crowd about 1.5
(``bench/bench_quality.py``): below 1.2 over 10 or more control ratings deserves a look before
the drift rule acts (it acts at its own, lower threshold). A rater may skip at most one game
pair in ten after their first 20: skipping close to that cap may mean picking easy pairs.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

# Share-based criteria need at least this many ratings of the kind they count: below it a
# share says little.
MIN_RATINGS = ("MIN_RATINGS", 20)


@dataclass(frozen=True)
class Flag:
    key: str
    label: str
    thresholds: dict[str, int | float]  # name -> default
    raised: Callable[[object, dict], bool]  # (a rater's statistics, every threshold) -> raised
    words: str  # the rule in words: ``words.format(**thresholds)``
    # The statistics of a rater the rule reads (documentation and the API's schema).
    reads: tuple[str, ...] = field(default=())


def _speeder(s, t) -> bool:
    return s.ratings >= t["MIN_RATINGS"] and (
        (s.median_seconds is not None and s.median_seconds < t["SPEEDER_MEDIAN_SECONDS"])
        or (s.near_floor_share is not None and s.near_floor_share > t["SPEEDER_NEAR_FLOOR_SHARE"])
    )


def _straight_liner(s, t) -> bool:
    return s.longest_run >= t["STRAIGHT_RUN"] or (
        s.ratings >= t["MIN_RATINGS"] and s.modal_share >= t["STRAIGHT_VALUE_SHARE"]
    )


def _prime_copier(s, t) -> bool:
    return (
        s.primed_compared >= t["MIN_RATINGS"]
        and s.prime_equal_share >= t["PRIME_COPIER_SHARE"]
        and s.prime_over_consensus is not None
        and s.prime_over_consensus >= t["PRIME_COPIER_MARGIN"]
    )


def _low_agreement(s, t) -> bool:
    return s.rated_with_reference >= t["MIN_RATINGS"] and s.agreement_rate < t["LOW_AGREEMENT_RATE"]


def _low_control_agreement(s, t) -> bool:
    return s.control_recent >= t["CONTROL_MIN_RATINGS"] and s.control_recent_agreement < t["CONTROL_AGREEMENT"]


def _skipper(s, t) -> bool:
    return s.game_serves >= t["MIN_RATINGS"] and s.skip_share is not None and s.skip_share >= t["SKIP_SHARE"]


FLAGS: tuple[Flag, ...] = (
    Flag(
        "speeder",
        "Speeder",
        {"SPEEDER_MEDIAN_SECONDS": 5.0, "SPEEDER_NEAR_FLOOR_SHARE": 0.5},
        _speeder,
        "half of the ratings take less than {SPEEDER_MEDIAN_SECONDS:g} seconds (the median), or more than "
        "{SPEEDER_NEAR_FLOOR_SHARE:.0%} of them are given within 1 second of the minimum time.",
        ("ratings", "median_seconds", "near_floor_share"),
    ),
    Flag(
        "straight_liner",
        "Straight-liner",
        {"STRAIGHT_RUN": 15, "STRAIGHT_VALUE_SHARE": 0.8},
        _straight_liner,
        "{STRAIGHT_RUN} or more identical ratings in a row, or one value in {STRAIGHT_VALUE_SHARE:.0%} or more of all "
        "the rater's ratings.",
        ("longest_run", "modal_share"),
    ),
    Flag(
        "prime_copier",
        "Prime-copier",
        {"PRIME_COPIER_SHARE": 0.8, "PRIME_COPIER_MARGIN": 0.25},
        _prime_copier,
        "{PRIME_COPIER_SHARE:.0%} or more of the game ratings equal the pair's first model prime (rounded), and that "
        "happens at least {PRIME_COPIER_MARGIN:.0%} (percentage points) more often than agreeing with the other "
        "raters' consensus on the same pairs. Agreeing with good primes is not copying: such a rater agrees with the "
        "people just as often.",
        ("primed_compared", "prime_equal_share", "prime_over_consensus"),
    ),
    Flag(
        "low_agreement",
        "Low agreement",
        {"LOW_AGREEMENT_RATE": 0.7},
        _low_agreement,
        "fewer than {LOW_AGREEMENT_RATE:.0%} of the compared ratings are exact or one level off (a rater choosing at "
        "random gets about 60%).",
        ("rated_with_reference", "exact_rate", "adjacent_rate"),
    ),
    Flag(
        "low_control_agreement",
        "Low control agreement",
        {"CONTROL_MIN_RATINGS": 10, "CONTROL_AGREEMENT": 1.2},
        _low_control_agreement,
        "over the latest ratings of control pairs (pairs rated by experts, hidden in the game) since the rater last "
        "entered the game, {CONTROL_MIN_RATINGS} or more of them, the mean agreement with the experts is below "
        "{CONTROL_AGREEMENT:g} (exact 2, one level off 1, otherwise 0; always answering 3 gets 0.8, a careful rater "
        "about 1.5). The drift rule sends a rater back to probation by itself at a lower mean over the same ratings.",
        ("control_recent", "control_recent_agreement"),
    ),
    Flag(
        "skipper",
        "Frequent skipper",
        {"SKIP_SHARE": 0.08},
        _skipper,
        "{SKIP_SHARE:.0%} or more of the game pairs served were skipped (raters may skip at most about one in ten "
        "after their first 20): picking easy pairs?",
        ("game_serves", "skips", "skip_share"),
    ),
)

FLAG_KEYS = tuple(flag.key for flag in FLAGS)
FLAG_LABELS = {flag.key: flag.label for flag in FLAGS}


def threshold_defaults() -> dict[str, int | float]:
    """Every threshold's default, MIN_RATINGS first (the settings read each from the environment)."""
    defaults = dict([MIN_RATINGS])
    for flag in FLAGS:
        defaults.update(flag.thresholds)
    return defaults


def flags_for(stats, thresholds: dict) -> list[str]:
    """The keys of the flags raised for one rater's statistics."""
    return [flag.key for flag in FLAGS if flag.raised(stats, thresholds)]


def rules_in_words(thresholds: dict) -> list[tuple[str, str]]:
    """(label, rule in words) of every flag, with the thresholds in force."""
    return [(flag.label, flag.words.format(**thresholds)) for flag in FLAGS]
