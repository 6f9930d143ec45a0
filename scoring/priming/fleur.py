"""FLEUR and RefFLEUR: the prompts and the score smoothing (SPEC section 4). numpy only.

From Lee et al., "FLEUR: An Explainable Reference-Free Evaluation Metric for Image Captioning
Using a Large Multimodal Model" (ACL 2024; seeds/002), sections 3.1-3.4 and Appendix B. The
prompt texts, line breaks included, are those of the authors' code (Yebin46/FLEUR, fleur.py
and reffleur.py), of which the paper prints the words; the conversation around them is
LLaVA v1's (the same code's "llava_v1" template), with its system message.

Score smoothing (section 3.2): the model answers greedily, e.g. "0.85". At the step that
writes the first decimal (right after "0.") and at the next one, the probabilities p(i, j) of
the tokens of the digits i = 0..9 give

    FLEUR = sum_{j=1,2} 10^-j * sum_{i=0..9} i * p(i, j)

Probabilities are the softmax over the whole vocabulary (not renormalised over the digits),
as in the authors' code. As there, the second decimal counts only when the answer has one
("0.8" is smoothed over its first decimal alone), and an answer of "1" or "1.0" scores
0.9 * p(0) + p(1) at the units place (Appendix B). Anything else ("5", "0.", no number at all)
is not a score.

This module is imported by the web process: it must never import torch or transformers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# LLaVA v1's system message (the "llava_v1" conversation of the FLEUR code).
SYSTEM_PROMPT = (
    "A chat between a curious human and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the human's questions."
)
_CRITERIA = (
    "Grading Criteria:\n\n"
    "0.0: The caption does not describe the image at all.\n"
    "1.0: The caption accurately and clearly describes the image.\n\n"
)
_TASK = (
    "Your task is to evaluate and rate the {what} on a scale of 0.0 to 1.0 based on the given "
    "Grading Criteria. (Print Real Number Score ONLY)\n\n"
)
_SCORE = "Score(Choose a rating from 0.0 to 1.0):"
FLEUR_PROMPT = _TASK.format(what="caption") + _CRITERIA + "Caption: {caption}\n\n" + _SCORE
REF_FLEUR_PROMPT = (
    _TASK.format(what="candidate caption")
    + _CRITERIA
    + "Reference Captions: {references}\n\nCandidate Caption: {caption}\n\n"
    + _SCORE
)
EXPLANATION_PROMPT = "Why? Tell me the reason."


def _one_line(text: str) -> str:
    # Captions go into the prompt as one line of single spaces (as the authors' code does):
    # a line break inside a caption would read as the prompt's own structure.
    return " ".join(text.split())


def fleur_prompt(caption: str) -> str:
    return FLEUR_PROMPT.format(caption=_one_line(caption))


def ref_fleur_prompt(caption: str, references: Sequence[str]) -> str:
    """RefFLEUR's prompt (section 3.3): the references one per line, then the candidate."""
    if not references:
        raise ValueError("RefFLEUR needs at least one reference caption")
    return REF_FLEUR_PROMPT.format(references="\n".join(_one_line(r) for r in references), caption=_one_line(caption))


def conversation(prompt: str, answer: str | None = None) -> list[dict]:
    """The chat messages of the score prompt (the image first), and with ``answer`` the model's
    reply and the follow-up question for the explanation (section 3.4)."""
    messages = [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM_PROMPT}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]},
    ]
    if answer is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": EXPLANATION_PROMPT}]})
    return messages


# ---------------------------------------------------------------------------------------
# Digits and answers


def digit_tokens(encode: Callable[[str], list[int]], decode: Callable[[list[int]], str]) -> tuple[list[int], int]:
    """The token of each digit 0-9 and of "." as the tokenizer writes a score ("0.85").

    ``encode`` turns text into token ids without special tokens, ``decode`` the reverse.
    Raises ValueError when the tokenizer does not write each digit as a token of its own
    (a tokenizer that merges "85" into one token cannot give p(i, j) per decimal place).
    """
    digits = []
    for digit in range(10):
        ids = encode(str(digit))
        if not ids or decode(ids[-1:]).strip() != str(digit):
            raise ValueError(f"the tokenizer has no token of its own for the digit {digit}")
        digits.append(ids[-1])
    if len(set(digits)) != 10:
        raise ValueError("the tokenizer gives two digits the same token")
    written = encode("0.85")
    if len(written) < 4 or [written[-4], written[-2], written[-1]] != [digits[0], digits[8], digits[5]]:
        raise ValueError(
            "the tokenizer does not write a score one digit per token (it splits '0.85' into "
            f"{[decode([t]) for t in written]}): FLEUR's score smoothing needs one token per digit"
        )
    dot = written[-3]
    if decode([dot]).strip() != ".":
        raise ValueError(f"the tokenizer writes '0.85' with {decode([dot])!r} for the decimal point")
    return digits, dot


class NotAScore(ValueError):
    """The model's answer is not a score between 0.0 and 1.0."""


@dataclass(frozen=True)
class Answer:
    """Where the score sits in the generated tokens: the units digit (0 or 1) and the steps at
    which to read the digit probabilities (the decimals' steps; the units step for "1")."""

    units: int
    read_steps: tuple[int, ...]


def read_answer(tokens: Sequence[int], digits: Sequence[int], dot: int) -> Answer:
    """Find the score in the answer's tokens (up to its end-of-sequence); raises NotAScore."""
    digit_of = {token: digit for digit, token in enumerate(digits)}
    units_step = next((step for step, token in enumerate(tokens) if token in digit_of), None)
    if units_step is None:
        raise NotAScore("no number in the answer")
    units = digit_of[tokens[units_step]]
    after = list(tokens[units_step + 1 :])
    if after and after[0] in digit_of:
        raise NotAScore("a number of two digits or more before the decimal point")
    decimals: list[int] = []
    if after and after[0] == dot:
        for offset in (2, 3):
            step = units_step + offset
            if step >= len(tokens) or tokens[step] not in digit_of:
                break
            decimals.append(step)
    if units == 1:
        if any(digit_of[tokens[step]] != 0 for step in decimals):
            raise NotAScore("a score above 1.0")
        return Answer(units=1, read_steps=(units_step,))
    if units != 0:
        raise NotAScore(f"a score of {units} or more")
    if not decimals:
        raise NotAScore("no decimal place after 0")
    return Answer(units=0, read_steps=tuple(decimals))


def digit_probabilities(logits: np.ndarray, digits: Sequence[int]) -> np.ndarray:
    """(steps, 10): the probability of each digit's token, softmax over the whole vocabulary."""
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(x).sum(axis=-1, keepdims=True))
    return np.exp(x[..., list(digits)] - log_z)


def smoothed_score(answer: Answer, probabilities: np.ndarray) -> float:
    """The FLEUR score from the digit probabilities at ``answer.read_steps`` (one row per step)."""
    p = np.asarray(probabilities, dtype=np.float64)
    if p.shape != (len(answer.read_steps), 10):
        raise ValueError(f"expected {len(answer.read_steps)} rows of 10 digit probabilities, got {p.shape}")
    if answer.units == 1:
        return float(0.9 * p[0, 0] + p[0, 1])
    places = 10.0 ** -np.arange(1, len(p) + 1)
    return float(places @ (p @ np.arange(10)))
