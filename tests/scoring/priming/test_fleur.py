"""FLEUR and RefFLEUR (seed 002): prompts, score smoothing, the digit tokens, and a LLaVA model.

No weights can be downloaded: the model is the tiny LLaVA of tiny_llava.py, randomly
initialised from a config, with a few weights set so that it answers "0.85" with designed
digit probabilities; its tokenizer is trained locally. Expected scores are computed by hand
from those designed logits (the formula written out here, not the code's).
"""

import math

import numpy as np
import pytest

from scoring.priming import fleur
from scoring.priming.fleur import Answer, NotAScore, read_answer, smoothed_score
from scoring.priming.scorer import PrimingPair, ScorerLoadError

# --- The prompts (section 3.1, 3.3, 3.4) --------------------------------------------------------

# Written out from the paper (the words) and the authors' fleur.py / reffleur.py (the line breaks).
FLEUR_TEXT = (
    "Your task is to evaluate and rate the caption on a scale of 0.0 to 1.0 based on the given Grading "
    "Criteria. (Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not describe the "
    "image at all.\n1.0: The caption accurately and clearly describes the image.\n\nCaption: {caption}\n\n"
    "Score(Choose a rating from 0.0 to 1.0):"
)
REF_FLEUR_TEXT = (
    "Your task is to evaluate and rate the candidate caption on a scale of 0.0 to 1.0 based on the given "
    "Grading Criteria. (Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not "
    "describe the image at all.\n1.0: The caption accurately and clearly describes the image.\n\n"
    "Reference Captions: {references}\n\nCandidate Caption: {caption}\n\nScore(Choose a rating from 0.0 to 1.0):"
)


def test_the_prompts_are_the_papers():
    assert fleur.fleur_prompt("A dog  runs\non the beach") == FLEUR_TEXT.format(caption="A dog runs on the beach")
    refs = ["a dog on a beach", "a dog\trunning by the water"]
    assert fleur.ref_fleur_prompt("A dog", refs) == REF_FLEUR_TEXT.format(
        references="a dog on a beach\na dog running by the water", caption="A dog"
    )
    with pytest.raises(ValueError, match="at least one reference"):
        fleur.ref_fleur_prompt("A dog", [])


def test_the_explanation_is_asked_after_the_models_own_answer():
    messages = fleur.conversation("PROMPT", answer="0.85")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"][0]["text"].startswith("A chat between a curious human")
    assert messages[1]["content"] == [{"type": "image"}, {"type": "text", "text": "PROMPT"}]
    assert messages[2]["content"][0]["text"] == "0.85"
    assert messages[3]["content"][0]["text"] == "Why? Tell me the reason."
    assert len(fleur.conversation("PROMPT")) == 2


# --- Score smoothing (section 3.2, Appendix B) ---------------------------------------------------


def test_smoothing_of_the_papers_appendix_b_example():
    p = [0.003021240234375, 0.00128936767578125, 0.0018758773803710938, 0.00353240966796875, 0.00827789306640625,
         0.03350830078125, 0.07672119140625, 0.2117919921875, 0.383544921875, 0.2763671875]  # fmt: skip
    q = [0.0450439453125, 0.035614013671875, 0.050628662109375, 0.044342041015625, 0.0400390625,
         0.3515625, 0.048309326171875, 0.041961669921875, 0.04681396484375, 0.035888671875]  # fmt: skip
    by_hand = 0.1 * (
        1 * 0.00128936767578125 + 2 * 0.0018758773803710938 + 3 * 0.00353240966796875 + 4 * 0.00827789306640625
        + 5 * 0.03350830078125 + 6 * 0.07672119140625 + 7 * 0.2117919921875 + 8 * 0.383544921875
        + 9 * 0.2763671875
    ) + 0.01 * (
        1 * 0.035614013671875 + 2 * 0.050628662109375 + 3 * 0.044342041015625 + 4 * 0.0400390625
        + 5 * 0.3515625 + 6 * 0.048309326171875 + 7 * 0.041961669921875 + 8 * 0.04681396484375
        + 9 * 0.035888671875
    )  # fmt: skip
    score = smoothed_score(Answer(units=0, read_steps=(2, 3)), np.array([p, q]))
    assert score == pytest.approx(by_hand, abs=1e-12)
    assert score == pytest.approx(0.80617, abs=1e-5)
    assert score == pytest.approx(0.80664, abs=5e-4)  # the paper prints "0.80664 ≈" the same sum


def test_smoothing_on_known_logits():
    digits = list(range(2, 12))  # token ids of 0..9 in a 13-token vocabulary; 0, 1 and 12 are words
    first = np.full(13, -np.inf)
    first[[digits[7], digits[8]]] = 0.0  # p(7) = p(8) = 1/2
    second = np.full(13, -np.inf)
    second[[digits[5], digits[0], 12]] = [math.log(3), 0.0, 0.0]  # p(5) = 3/5, p(0) = 1/5, a word 1/5
    probabilities = fleur.digit_probabilities(np.stack([first, second]), digits)
    np.testing.assert_allclose(probabilities[0], [0, 0, 0, 0, 0, 0, 0, 0.5, 0.5, 0], atol=1e-12)
    np.testing.assert_allclose(probabilities[1], [0.2, 0, 0, 0, 0, 0.6, 0, 0, 0, 0], atol=1e-12)
    # 0.1 * (7 * 0.5 + 8 * 0.5) + 0.01 * (5 * 0.6) = 0.75 + 0.03
    assert smoothed_score(Answer(0, (3, 4)), probabilities) == pytest.approx(0.78, abs=1e-12)
    # "0.7" alone: its first decimal only.
    assert smoothed_score(Answer(0, (3,)), probabilities[:1]) == pytest.approx(0.75, abs=1e-12)
    # "1.0": 0.9 * p(0) + p(1) at the units place (Appendix B).
    units = np.full(13, -np.inf)
    units[[digits[0], digits[1]]] = [0.0, math.log(3)]  # p(0) = 1/4, p(1) = 3/4
    one = fleur.digit_probabilities(units[None, :], digits)
    assert smoothed_score(Answer(1, (0,)), one) == pytest.approx(0.9 * 0.25 + 0.75, abs=1e-12)


DIGITS = list(range(100, 110))  # token of digit d: 100 + d
DOT, WORD, SPACE = 7, 8, 9


def tokens(text: str) -> list[int]:
    return [100 + int(c) if c.isdigit() else {".": DOT, " ": SPACE}.get(c, WORD) for c in text]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("0.85", Answer(0, (2, 3))),
        ("0.8", Answer(0, (2,))),
        ("Score: 0.85.", Answer(0, (9, 10))),
        ("0.857", Answer(0, (2, 3))),
        ("1.0", Answer(1, (0,))),
        ("1", Answer(1, (0,))),
        ("1.00", Answer(1, (0,))),
    ],
)
def test_the_score_is_found_in_the_answer(answer, expected):
    assert read_answer(tokens(answer), DIGITS, DOT) == expected


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "no number"),
        ("good", "no number"),
        ("0.", "no decimal place"),
        ("0", "no decimal place"),
        ("5", "a score of 5"),
        ("12.5", "two digits"),
        ("1.5", "above 1.0"),
    ],
)
def test_an_answer_that_is_not_a_score_says_why(answer, reason):
    with pytest.raises(NotAScore, match=reason):
        read_answer(tokens(answer), DIGITS, DOT)


# --- The digit tokens of a tokenizer ----------------------------------------------------------


def test_the_digit_tokens_are_the_tokenizers_own():
    pytest.importorskip("transformers")
    from tests.scoring.priming.tiny_llava import build_tokenizer

    tokenizer = build_tokenizer()
    digits, dot = fleur.digit_tokens(lambda text: tokenizer.encode(text, add_special_tokens=False), tokenizer.decode)
    assert digits == [tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)]
    assert dot == tokenizer.convert_tokens_to_ids(".")
    written = tokenizer.convert_ids_to_tokens(tokenizer.encode("0.85", add_special_tokens=False))
    assert written == ["▁", "0", ".", "8", "5"]


def test_a_tokenizer_that_merges_digits_is_refused():
    pytest.importorskip("transformers")
    from tests.scoring.priming.tiny_llava import build_tokenizer

    tokenizer = build_tokenizer(split_digits=False)
    assert "85" in tokenizer.convert_ids_to_tokens(tokenizer.encode("0.85", add_special_tokens=False))
    with pytest.raises(ValueError, match="one token per digit"):
        fleur.digit_tokens(lambda text: tokenizer.encode(text, add_special_tokens=False), tokenizer.decode)


# --- A LLaVA model --------------------------------------------------------------------------


def designed_score(vocab_size: int) -> float:
    """FLEUR of the tiny model's designed logits, by hand: softmax over the whole vocabulary
    (the named digits, every other token at FLOOR), then the two decimal places."""
    from tests.scoring.priming.tiny_llava import FIRST_DECIMAL, FLOOR, SECOND_DECIMAL

    def mean_digit(logits: dict[int, float]) -> float:
        z = sum(math.exp(v) for v in logits.values()) + (vocab_size - len(logits)) * math.exp(FLOOR)
        return sum(d * math.exp(v) / z for d, v in logits.items())

    return 0.1 * mean_digit(FIRST_DECIMAL) + 0.01 * mean_digit(SECOND_DECIMAL)


def synthetic_images(n: int, seed: int = 0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, size=(40, 48, 3), dtype=np.uint8)) for _ in range(n)]


CAPTIONS = [
    (0, "a dog runs on the beach"),
    (0, "a brown dog near the sea"),
    (0, "waves"),
    (1, "two people ride bicycles"),
    (1, "a street at night"),
    (2, "a bowl of fruit on a table"),
    (2, "apples"),
]
REFERENCES = {0: ("a dog on a beach", "a dog running by the water"), 2: ("fruit in a bowl",)}


def pairs_of(images, captions=CAPTIONS) -> list[PrimingPair]:
    return [
        PrimingPair(
            pk=n,
            image_key=f"image-{i}",
            load_image=lambda image=images[i]: image,
            caption=caption,
            references=REFERENCES.get(i, ()),
        )
        for n, (i, caption) in enumerate(captions)
    ]


@pytest.fixture(scope="module")
def scorer(tiny_llava_dir):
    from scoring.priming.fleur_scorer import load_fleur

    return load_fleur(str(tiny_llava_dir), device="cpu")


def test_fleur_smooths_the_digit_probabilities_of_the_models_greedy_answer(scorer):
    from tests.scoring.priming.tiny_llava import CONTEXT_EFFECT

    pairs = pairs_of(synthetic_images(3))
    scores = scorer.score_pairs(pairs, references=False)
    expected = designed_score(len(scorer.processor.tokenizer))
    assert all(s.error is None and s.explanation == "" for s in scores)
    assert [s.value for s in scores] == pytest.approx([expected] * len(pairs), abs=CONTEXT_EFFECT)
    # The image and the caption reach the model: each pair has a score of its own.
    values = [s.value for s in scores]
    assert min(abs(a - b) for n, a in enumerate(values) for b in values[n + 1 :]) > 1e-6
    same_caption = pairs_of(synthetic_images(3), [(0, "a dog"), (1, "a dog")])
    first, second = scorer.score_pairs(same_caption, references=False)
    assert abs(first.value - second.value) > 1e-5


def test_batches_give_the_scores_of_one_pair_at_a_time(scorer):
    import torch

    pairs = pairs_of(synthetic_images(3))
    for references in (False, True):
        together = scorer.score_pairs(pairs, references=references, batch_size=8)
        by_four = scorer.score_pairs(pairs, references=references, batch_size=4)
        alone = [scorer.score_pairs([pair], references=references, batch_size=1)[0] for pair in pairs]
        for a, b, c in zip(together, by_four, alone, strict=True):
            assert (a.value is None) == (b.value is None) == (c.value is None)
            if a.value is not None:
                assert a.value == pytest.approx(c.value, abs=1e-5) and b.value == pytest.approx(c.value, abs=1e-5)
    # And one pair at a time equals transformers' own generate, without the shared prefix.
    processor, model = scorer.processor, scorer.model
    pair = pairs[3]
    messages = fleur.conversation(fleur.fleur_prompt(pair.caption))
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = processor(images=[pair.load_image()], text=[text], return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(
            **inputs, do_sample=False, max_new_tokens=6, output_logits=True, return_dict_in_generate=True
        )
    generated = out.sequences[0, inputs["input_ids"].shape[1] :].tolist()
    assert processor.tokenizer.decode(generated, skip_special_tokens=True).strip() == "0.85"
    first, second = (out.logits[step][0].numpy() for step in (2, 3))  # "0" "." then the decimals
    by_hand = 0.1 * sum(d * p for d, p in enumerate(fleur.digit_probabilities(first, scorer.digits)))
    by_hand += 0.01 * sum(d * p for d, p in enumerate(fleur.digit_probabilities(second, scorer.digits)))
    assert scorer.score_pairs([pair], references=False)[0].value == pytest.approx(by_hand, abs=1e-5)


def test_ref_fleur_reads_the_references_and_applies_only_to_pairs_that_have_them(scorer):
    pairs = pairs_of(synthetic_images(3))
    plain = scorer.score_pairs(pairs, references=False)
    with_refs = scorer.score_pairs(pairs, references=True)
    for pair, a, b in zip(pairs, plain, with_refs, strict=True):
        if pair.references:
            assert b.value is not None and abs(a.value - b.value) > 1e-6  # another prompt, another score
        else:
            assert b.value is None and b.error is None  # does not apply


def test_explanations_only_when_asked(scorer):
    pairs = pairs_of(synthetic_images(3))[:3]
    asked = scorer.score_pairs(pairs, references=False, explain=True)
    # The tiny model answers any question that ends in "ASSISTANT:" with "0.85", the
    # follow-up "Why? Tell me the reason." too.
    assert [s.explanation for s in asked] == ["0.85"] * 3
    assert [s.value for s in asked] == [s.value for s in scorer.score_pairs(pairs, references=False)]


def test_a_model_that_does_not_answer_with_a_score_fails_those_pairs_only(tmp_path):
    from scoring.priming.fleur_scorer import load_fleur
    from tests.scoring.priming.tiny_llava import save_tiny_llava

    rambling = load_fleur(str(save_tiny_llava(tmp_path / "random", answer=False)), device="cpu")
    broken = PrimingPair(pk=99, image_key="broken", load_image=lambda: 1 / 0, caption="a dog")
    scores = rambling.score_pairs([*pairs_of(synthetic_images(1), [(0, "a dog")]), broken], references=False)
    assert scores[0].value is None and "is not a score" in scores[0].error
    assert scores[1].error.startswith("image could not be decoded: ZeroDivisionError")


def test_bad_model_sources_are_clear_errors(tmp_path, tiny_llava_dir):
    import shutil

    from scoring.priming.fleur_scorer import load_fleur

    with pytest.raises(ScorerLoadError, match=f"FLEUR model folder not found: {tmp_path}/nowhere"):
        load_fleur(str(tmp_path / "nowhere"), device="cpu")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScorerLoadError, match=r"empty: no config\.json"):
        load_fleur(str(tmp_path / "empty"), device="cpu")
    not_llava = tmp_path / "not-llava"
    not_llava.mkdir()
    (not_llava / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ScorerLoadError, match="a 'bert' model, not LLaVA"):
        load_fleur(str(not_llava), device="cpu")
    no_weights = tmp_path / "no-weights"
    shutil.copytree(tiny_llava_dir, no_weights)
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(ScorerLoadError, match="no-weights: could not be loaded"):
        load_fleur(str(no_weights), device="cpu")
    partial = tmp_path / "partial"
    shutil.copytree(tiny_llava_dir, partial)
    from safetensors.torch import load_file, save_file

    weights = load_file(partial / "model.safetensors")
    save_file({k: v for k, v in weights.items() if "lm_head" not in k}, partial / "model.safetensors")
    with pytest.raises(ScorerLoadError, match=r"partial: 1 weights missing \(e.g. lm_head.weight\)"):
        load_fleur(str(partial), device="cpu")
    merged = tmp_path / "merged-digits"
    from tests.scoring.priming.tiny_llava import save_tiny_llava

    save_tiny_llava(merged, split_digits=False)
    with pytest.raises(ScorerLoadError, match="merged-digits: the tokenizer does not write a score one digit"):
        load_fleur(str(merged), device="cpu")
