"""FLEUR scoring throughput: pairs/s of a 7B-shaped LLaVA with random weights, bf16 on a GPU.

Not a test: it prints figures. Shapes (``--shape 7b``): LLaVA 1.5 7B, i.e. CLIP ViT-L/14 at
336 px (24 layers, 1024 wide; 576 image tokens), the 2-layer projector, and a Llama 2 7B /
Vicuna language model (32 layers, 4096 wide, MLP 11008, 32 heads, vocabulary 32064); built
on the device in bfloat16 from configs, nothing downloaded. ``--shape tiny`` is the tests'
2-layer model, to check the bench itself on a CPU.

The weights are random but for the few that tests/scoring/priming/tiny_llava.py sets so that
the greedy answer is "0.85" and then stops, as a real model's does (a purely random model
would write up to the answer cap on every row); ``--gain`` scales the blocks as there. The
tokenizer is the tests' byte-pair tokenizer, trained locally: the bench prints how many
tokens the prompts take, to set beside LLaVA's own tokenizer. Pairs are synthetic VICR-like
pairs: 640x480 JPEGs, 1.6 captions per image.

  (a)  priming path: FleurScorer.score_pairs in batches of --batch-size, the prompt prefix
       (system message, image, instructions) computed once per image of a batch;
  (a1) the same, one pair at a time (--single-pairs of them);
  (b)  transformers' plain batched generate on the processor's inputs, same batches and the
       same answer cap, without the shared prefix (nor score smoothing);
  (x)  the priming path with explanations (--explain-pairs of them; up to 256 more tokens each).

    .venv/bin/python bench/bench_fleur.py --shape tiny --device cpu --pairs 32 --batch-size 8
    .venv/bin/python bench/bench_fleur.py --device cuda --pairs 512 --batch-size 32
"""

import argparse
import io
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = {
    "7b": {
        "vision": {
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "image_size": 336,
            "patch_size": 14,
            "projection_dim": 768,
        },
        "text": {
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "vocab_size": 32064,
            "max_position_embeddings": 4096,
        },
    },
    "tiny": {
        "vision": {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        "text": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "vocab_size": 512,
            "max_position_embeddings": 2048,
        },
    },
}


def build(shape: str, device: str, dtype, gain: float):
    import torch
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.llava.image_processing_llava import LlavaImageProcessor

    from tests.scoring.priming.tiny_llava import CHAT_TEMPLATE, build_tokenizer, teach_answer

    tokenizer = build_tokenizer()
    sizes = SHAPES[shape]
    text = LlamaConfig(
        **sizes["text"],
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    vision = CLIPVisionConfig(**sizes["vision"])
    patches = (vision.image_size // vision.patch_size) ** 2
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_seq_length=patches,
    )
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlavaForConditionalGeneration(config).eval()
    finally:
        torch.set_default_dtype(previous)
    teach_answer(model, tokenizer, gain=gain)
    side = vision.image_size
    processor = LlavaProcessor(
        image_processor=LlavaImageProcessor(size={"shortest_edge": side}, crop_size={"height": side, "width": side}),
        tokenizer=tokenizer,
        patch_size=vision.patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    return model, processor


def priming_pairs(n_pairs: int):
    from bench.bench_priming import synthetic_pairs
    from scoring.pictures import StoredImage
    from scoring.priming.scorer import PrimingPair

    return [
        PrimingPair(pk=n, image_key=key, load_image=StoredImage(read=lambda data=data: data), caption=caption)
        for n, (key, data, caption) in enumerate(synthetic_pairs(n_pairs, round(n_pairs / 1.6)))
    ]


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, work) -> tuple[float, object]:
    sync(device)
    started = time.perf_counter()
    result = work()
    sync(device)
    return time.perf_counter() - started, result


def plain_generate(scorer, pairs, batch_size: int) -> None:
    """transformers' own batched generate, left padding, no shared prefix: the reference (b)."""
    import torch
    from PIL import Image

    from scoring.priming import fleur
    from scoring.priming.fleur_scorer import SCORE_MAX_NEW_TOKENS

    processor = scorer.processor
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        images = [Image.open(io.BytesIO(p.load_image.read())).convert("RGB") for p in batch]
        texts = [
            processor.apply_chat_template(fleur.conversation(fleur.fleur_prompt(p.caption)), add_generation_prompt=True)
            for p in batch
        ]
        inputs = processor(images=images, text=texts, return_tensors="pt", padding=True).to(scorer.device)
        inputs["pixel_values"] = inputs["pixel_values"].to(scorer.model.dtype)
        with torch.inference_mode():
            scorer.model.generate(
                **inputs, do_sample=False, max_new_tokens=SCORE_MAX_NEW_TOKENS, pad_token_id=scorer.pad_id
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="7b")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--single-pairs", type=int, default=16, help="pairs timed one at a time (a1)")
    parser.add_argument("--explain-pairs", type=int, default=32, help="pairs timed with explanations (x)")
    parser.add_argument("--gain", type=float, default=1.0, help="blocks' output scale (tests use 10 on 2 layers)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = parser.parse_args()

    import torch

    from scoring.priming import fleur
    from scoring.priming.fleur_scorer import FleurScorer

    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    started = time.perf_counter()
    model, processor = build(args.shape, device, dtype, args.gain)
    scorer = FleurScorer(model, processor, identity=f"bench: random {args.shape}", device=device)
    params = sum(p.numel() for p in model.parameters())
    pairs = priming_pairs(args.pairs)
    print(f"LLaVA {args.shape} shape, {params / 1e9:.2f} B parameters, random, {dtype} on {device}; ", end="")
    print(f"built in {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.2f}")
    text = processor.apply_chat_template(
        fleur.conversation(fleur.fleur_prompt(pairs[0].caption)), add_generation_prompt=True
    )
    tokens = len(processor.tokenizer(text)["input_ids"])
    image_tokens = processor.image_processor.crop_size["height"] // processor.patch_size
    print(f"prompt: {tokens} tokens with the image placeholder, {image_tokens**2} image tokens once expanded")
    print(f"{len(pairs)} pairs over {len({p.image_key for p in pairs})} images, batch size {args.batch_size}")

    scorer.score_pairs(pairs[: min(4, len(pairs))], references=False, batch_size=4)  # warm-up
    seconds, scores = timed(device, lambda: scorer.score_pairs(pairs, references=False, batch_size=args.batch_size))
    answered = sum(s.value is not None for s in scores)
    figures = {"a": (len(pairs), seconds)}
    single = pairs[: args.single_pairs]
    figures["a1"] = (len(single), timed(device, lambda: scorer.score_pairs(single, references=False, batch_size=1))[0])
    figures["b"] = (len(pairs), timed(device, lambda: plain_generate(scorer, pairs, args.batch_size))[0])
    explained = pairs[: args.explain_pairs]
    figures["x"] = (
        len(explained),
        timed(
            device, lambda: scorer.score_pairs(explained, references=False, explain=True, batch_size=args.batch_size)
        )[0],
    )
    labels = {
        "a": "(a)  priming path: batches, prefix once per image",
        "a1": "(a1) priming path, one pair at a time",
        "b": "(b)  plain batched generate, no shared prefix",
        "x": "(x)  priming path with explanations",
    }
    print(f"answers that were scores: {answered} of {len(pairs)} (a random model: see --gain)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("                                                     pairs    seconds    pairs/s")
    for key, label in labels.items():
        n, s = figures[key]
        print(f"{label:<52} {n:6d} {s:10.2f} {n / s:10.2f}")
    rates = {key: n / seconds for key, (n, seconds) in figures.items()}
    print(f"(a)/(b) priming path over plain generate: {rates['a'] / rates['b']:.2f}x")


if __name__ == "__main__":
    main()
