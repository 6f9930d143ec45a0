"""The 5-level caption rating scale (SPEC section 1; the VICR paper's Table 2).

``meaning`` is the rubric verbatim: the Rating Guide shows it word for word. ``short`` is a
one-line reminder next to each choice on the rating screen, condensed from the same rubric.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Level:
    value: int
    short: str
    meaning: str


# Highest first, as in the paper's table and the rating screen.
LEVELS: tuple[Level, ...] = (
    Level(
        5,
        "Everything right and placed in space, with the setting or event interpreted",
        "Objects, a general scene, and actions are correctly identified if present in the image. "
        "The caption describes what is seen and where things are in space. "
        "Interpretation of overall setting and/or event is included.",
    ),
    Level(
        4,
        "Mostly identified and placed in space, but no interpretation of an event",
        "Objects and/or a general scene and/or an action are correctly identified but not every "
        "element is completely identified. The caption describes what is seen and where things are "
        "in space. There is no interpretation of an event.",
    ),
    Level(
        3,
        "Relevant objects right, but not where they are; no setting, no event",
        "Relevant objects are correctly identified. The caption describes what is seen but not "
        "where objects are in space. There is no description of the overall setting and no "
        "interpretation of an event.",
    ),
    Level(
        2,
        "Partly right with some errors, but gives an idea of what is happening",
        "Objects are partially correctly identified with some errors, but the caption is accurate "
        "enough to give an idea of what is happening in the image. The caption identifies most of "
        "the objects but might not identify everything. There is no interpretation of what "
        "anything means.",
    ),
    Level(
        1,
        "Objects wrong: gives the wrong idea of the image",
        "Objects are incorrectly identified. The caption gives the wrong idea about what is happening in the image.",
    ),
)

SHORT = {level.value: level.short for level in LEVELS}
