"""One LLaVA model giving FLEUR and RefFLEUR scores (and, when asked, their explanations).

Worker code only: torch and transformers are imported inside the functions that need them.
The model is transformers' ``LlavaForConditionalGeneration`` with its processor (image
preprocessing, the checkpoint's chat template, the tokenizer), loaded by ``load_fleur`` from a
local folder or a Hugging Face hub name; the prompts and the score smoothing are
``scoring.priming.fleur``'s.

Batches: the pairs of a batch are answered together with greedy decoding (left padding).
Their prompts share everything up to the caption: the system message, the image, the
instructions and the grading criteria, some 650 of LLaVA 1.5's ~700 prompt tokens. That
prefix is computed once per distinct image of the batch (an image's captions share it) and
its key/value cache copied to the rows of that image; ``generate`` then reads only each
row's own tail (caption and answer cue), which sits after a gap of padding masked out of
attention, with positions counted over the mask (transformers restarts generation from a
given cache this way). The explanation (the follow-up "Why? Tell me the reason.") is a
second generation, run only when asked (``explain``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoring.priming import fleur
from scoring.priming.images import load_rgb
from scoring.priming.scorer import PrimingPair, RawScore, ScorerLoadError, short_error

if TYPE_CHECKING:
    import torch
    from PIL import Image

# The answer is a number ("0.85"): a few tokens, with room for a short lead-in ("Score: ").
SCORE_MAX_NEW_TOKENS = 10
EXPLANATION_MAX_NEW_TOKENS = 256
DEFAULT_BATCH_SIZE = 8
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt")


@dataclass(frozen=True)
class _Row:
    """One prompt to answer: its pair's position in the call, its image, the score prompt and,
    for the explanation, the model's answer to it."""

    index: int
    image_key: str
    image: Image.Image
    prompt: str
    answer: str | None = None


@dataclass(frozen=True)
class _Answer:
    """The model's answer to one score prompt: the smoothed score and the answer's text, or why
    the answer is not a score."""

    value: float | None
    text: str
    error: str | None = None


class FleurScorer:
    """A LLaVA model scoring pairs with FLEUR (``references=False``) or RefFLEUR (``True``).

    Not thread-safe: one scorer per worker process (the priming runner scores in one thread).
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        identity: str,
        device: str = "cpu",
    ) -> None:
        import torch

        self.model = model.to(device).eval()
        self.processor = processor
        # Left padding: every row's prompt must end where generation starts.
        self.processor.tokenizer.padding_side = "left"
        self.identity = identity
        self.device = torch.device(device)
        tokenizer = processor.tokenizer
        self.digits, self.dot = fleur.digit_tokens(
            lambda text: tokenizer.encode(text, add_special_tokens=False),
            tokenizer.decode,
        )
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        eos = model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}

    # Scoring -------------------------------------------------------------------------

    def score_pairs(
        self,
        pairs: Sequence[PrimingPair],
        *,
        references: bool,
        explain: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> list[RawScore]:
        """FLEUR (or RefFLEUR) of each pair, in order, ``batch_size`` prompts at a time, each with
        the model's explanation when ``explain``. RefFLEUR does not apply to a pair without
        references (value None); an image that cannot be decoded or an answer that is not a
        score is that pair's error. The pairs of one image go into one batch where they fit."""
        results = [RawScore() for _ in pairs]
        images: dict[str, Image.Image | str] = {}
        rows = []
        for index, pair in enumerate(pairs):
            if references and not pair.references:
                continue
            if pair.image_key not in images:
                images[pair.image_key] = _decoded(pair)
            image = images[pair.image_key]
            if isinstance(image, str):
                results[index] = RawScore(error=image)
                continue
            prompt = (
                fleur.ref_fleur_prompt(pair.caption, pair.references)
                if references
                else fleur.fleur_prompt(pair.caption)
            )
            rows.append(_Row(index, pair.image_key, image, prompt))
        rows.sort(key=lambda row: row.image_key)
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            answers = self._score_batch(batch)
            explanations = self._explain_batch(batch, answers) if explain else {}
            for row in batch:
                answer = answers[row.index]
                results[row.index] = (
                    RawScore(error=answer.error)
                    if answer.error
                    else RawScore(value=answer.value, explanation=explanations.get(row.index, ""))
                )
        return results

    def _score_batch(self, rows: list[_Row]) -> dict[int, _Answer]:
        """The answers by row index."""
        out, width = self._generate(rows, SCORE_MAX_NEW_TOKENS, logits=True)
        results, wanted = {}, []
        for r, row in enumerate(rows):
            tokens = self._answer_tokens(out.sequences[r, width:].tolist())
            text = self.processor.tokenizer.decode(tokens, skip_special_tokens=True).strip()
            try:
                answer = fleur.read_answer(tokens, self.digits, self.dot)
            except fleur.NotAScore as exc:
                results[row.index] = _Answer(None, text, f"the model's answer {text[:80]!r} is not a score ({exc})")
                continue
            wanted.append((r, row, answer, text))
        if wanted:
            import torch

            steps = [(r, step) for r, _, answer, _ in wanted for step in answer.read_steps]
            logits = torch.stack([out.logits[step][r] for r, step in steps]).float().cpu().numpy()
            probabilities = iter(fleur.digit_probabilities(logits, self.digits))
            for _, row, answer, text in wanted:
                rows_of_answer = [next(probabilities) for _ in answer.read_steps]
                results[row.index] = _Answer(fleur.smoothed_score(answer, rows_of_answer), text)
        return results

    def _explain_batch(self, rows: list[_Row], answers: dict[int, _Answer]) -> dict[int, str]:
        """The model's reply to "Why? Tell me the reason." after its own answer, by row index."""
        asked = [
            _Row(row.index, row.image_key, row.image, row.prompt, answer=answers[row.index].text)
            for row in rows
            if answers[row.index].error is None
        ]
        if not asked:
            return {}
        out, width = self._generate(asked, EXPLANATION_MAX_NEW_TOKENS, logits=False)
        decode = self.processor.tokenizer.decode
        return {
            row.index: decode(self._answer_tokens(out.sequences[r, width:].tolist()), skip_special_tokens=True).strip()
            for r, row in enumerate(asked)
        }

    def _answer_tokens(self, tokens: list[int]) -> list[int]:
        """The generated tokens up to the end of the answer (end-of-sequence, then padding)."""
        for position, token in enumerate(tokens):
            if token in self.eos_ids:
                return tokens[:position]
        return tokens

    # Generation with the shared prefix -----------------------------------------------

    def _generate(self, rows: list[_Row], max_new_tokens: int, *, logits: bool) -> tuple[Any, int]:
        """Greedy answers of ``rows``: transformers' GenerateOutput, and the width of the prompt
        in its sequences (the answers follow it). The prompt prefix is shared."""
        import torch
        from transformers import DynamicCache, GenerationConfig

        texts = [
            self.processor.apply_chat_template(fleur.conversation(row.prompt, row.answer), add_generation_prompt=True)
            for row in rows
        ]
        inputs = self.processor(images=[row.image for row in rows], text=texts, return_tensors="pt", padding=True)
        mask = inputs["attention_mask"].bool()
        ids = [inputs["input_ids"][r][mask[r]] for r in range(len(rows))]
        # At least one token of each row is left to generate's own prefill (it starts from there).
        width = min(_common_prefix(ids), min(len(row_ids) for row_ids in ids) - 1)
        image_token = self.model.config.image_token_id
        # Only a prefix that holds every row's image can be computed once per image.
        shared = width > 0 and not any((row_ids[width:] == image_token).any() for row_ids in ids)
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            output_logits=logits,
            return_dict_in_generate=True,
            pad_token_id=self.pad_id,
            eos_token_id=sorted(self.eos_ids) or None,
        )
        pixel_values = inputs["pixel_values"].to(self.device, self.model.dtype)
        with torch.inference_mode():
            if not shared:
                out = self.model.generate(
                    input_ids=inputs["input_ids"].to(self.device),
                    attention_mask=inputs["attention_mask"].to(self.device),
                    pixel_values=pixel_values,
                    generation_config=config,
                )
                return out, inputs["input_ids"].shape[1]
            first_row: dict[str, int] = {}
            for r, row in enumerate(rows):
                first_row.setdefault(row.image_key, r)
            distinct = list(first_row.values())
            cache = DynamicCache(config=self.model.config)
            self.model(
                input_ids=torch.stack([ids[r][:width] for r in distinct]).to(self.device),
                pixel_values=pixel_values[distinct],
                past_key_values=cache,
                use_cache=True,
            )
            slot_of = {key: n for n, key in enumerate(first_row)}
            cache.batch_select_indices(torch.tensor([slot_of[row.image_key] for row in rows], device=self.device))
            tail = max(len(row_ids) - width for row_ids in ids)
            full = torch.full((len(rows), width + tail), self.pad_id, dtype=torch.long)
            attention = torch.zeros_like(full)
            for r, row_ids in enumerate(ids):
                own = row_ids[width:]
                full[r, :width], attention[r, :width] = row_ids[:width], 1
                full[r, width + tail - len(own) :], attention[r, width + tail - len(own) :] = own, 1
            out = self.model.generate(
                input_ids=full.to(self.device),
                attention_mask=attention.to(self.device),
                past_key_values=cache,
                generation_config=config,
            )
            return out, width + tail


def _common_prefix(rows: Sequence[torch.Tensor]) -> int:
    """The number of leading tokens all rows share."""
    shortest = min(len(row) for row in rows)
    first = rows[0][:shortest]
    differs = [(row[:shortest] != first).nonzero() for row in rows[1:]]
    return min([shortest, *(int(d[0]) for d in differs if len(d))])


def _decoded(pair: PrimingPair) -> Image.Image | str:
    image, error = load_rgb(pair.load_image)
    return error if image is None else image


# ---------------------------------------------------------------------------------------
# Loading


def load_fleur(source: str, device: str | None = None) -> FleurScorer:
    """A FleurScorer of the LLaVA model in ``source``: a local folder (config.json, the weights,
    the processor's and tokenizer's files, as ``save_pretrained`` writes them) or a hub name
    (``llava-hf/llava-1.5-13b-hf``, downloaded where a hub is reachable).

    On CUDA the model runs in bfloat16, on the CPU in float32. Raises ScorerLoadError, naming
    the source and what is wrong, for anything that cannot be loaded or would score
    meaninglessly: not a LLaVA model, weights missing from the checkpoint (transformers would
    fill them with random values), no chat template, a tokenizer that merges digits.
    """
    try:
        import torch
        from transformers import AutoConfig, AutoProcessor, LlavaForConditionalGeneration
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ScorerLoadError(f"torch/transformers are not installed in this worker: {exc}") from exc

    transformers_logging.disable_progress_bar()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    folder = Path(source).expanduser()
    local = folder.is_dir()
    if not local and (source.startswith(("/", ".", "~")) or folder.exists()):
        raise ScorerLoadError(f"FLEUR model folder not found: {source}")
    if local and not (folder / "config.json").is_file():
        raise ScorerLoadError(
            f"{source}: no config.json (expected a transformers LLaVA folder: config.json, the weights, "
            "the tokenizer's and processor's files)"
        )
    where = "folder" if local else "hub model"
    try:
        config = AutoConfig.from_pretrained(source, local_files_only=local)
    except Exception as exc:
        raise ScorerLoadError(f"FLEUR {where} {source}: no readable model config ({short_error(exc)})") from exc
    if config.model_type != "llava":
        raise ScorerLoadError(
            f"FLEUR {where} {source}: a {config.model_type!r} model, not LLaVA (FLEUR runs "
            "transformers' LlavaForConditionalGeneration)"
        )
    try:
        model, info = LlavaForConditionalGeneration.from_pretrained(
            source, dtype=dtype, local_files_only=local, output_loading_info=True
        )
        processor = AutoProcessor.from_pretrained(source, local_files_only=local)
    except Exception as exc:
        raise ScorerLoadError(f"FLEUR {where} {source}: could not be loaded ({short_error(exc)})") from exc
    missing = sorted(info.get("missing_keys") or [])
    mismatched = list(info.get("mismatched_keys") or [])
    if missing or mismatched:
        raise ScorerLoadError(
            f"FLEUR {where} {source}: {len(missing)} weights missing (e.g. {', '.join(missing[:3]) or '-'}) and "
            f"{len(mismatched)} of another shape in the checkpoint: random weights would give meaningless scores"
        )
    if not getattr(processor, "chat_template", None):
        raise ScorerLoadError(f"FLEUR {where} {source}: the processor has no chat template to write the prompt with")
    identity = f"{source} weights={_fingerprint(folder) if local else getattr(config, '_commit_hash', None) or '-'}"
    try:
        return FleurScorer(model, processor, identity=identity[:250], device=device)
    except ValueError as exc:  # the digit tokens
        raise ScorerLoadError(f"FLEUR {where} {source}: {exc}") from exc


def _fingerprint(folder: Path) -> str:
    """A short name of the weights in a model folder: its config and the names and sizes of its
    weight files (hashing gigabytes of weights at every start would take minutes)."""
    digest = hashlib.sha256((folder / "config.json").read_bytes())
    for path in sorted(folder.iterdir()):
        if path.suffix in WEIGHT_SUFFIXES:
            digest.update(f"{path.name}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]
