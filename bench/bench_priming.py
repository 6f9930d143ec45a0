"""Model priming throughput: pairs/s of CLIP-S scoring, ViT-B-32 with random weights.

Synthetic VICR-like data: JPEG images (640x480) with 1.6 captions per image on average
(VICR paper, section 3: 15,646 image-caption pairs over 9,990 images), captions of 8-14
words, handed to the scorer as file bytes (``StoredImage``), as the priming runner does.
Compared:

  (a)  priming path, device decode: ClipScorer.score_pairs with ``tensor_decode`` (JPEGs
       decoded, resized and normalised on the model's device: nvJPEG on CUDA; the next batch
       prepared while the current one is encoded), each image decoded and encoded once;
  (a0) priming path, CPU decode: the same with Pillow and open_clip's preprocessing on the
       CPU (the path every non-JPEG format keeps);
  (b)  plain loop: per pair, decode + encode its image and its caption one at a time;
  (b') reference-style batches: every pair's image encoded (no reuse), full 77-token texts,
       in batches, as jmhessel/clipscore's clipscore.py does;
  (c)  forward-pass bound: the same image and text batches as (a), on tensors decoded,
       preprocessed and tokenized beforehand (text with the same padding cut as (a)); also
       shown with model.encode_text on the full 77-token context.

Goals: (a) >= 1.3x (b); on the CPU (a) >= 90% of (c); on one H100 (a) >= 5,000 pairs/s,
with its share of the forward-pass bound printed.

    .venv/bin/python bench/bench_priming.py                # 320 pairs over 200 images, CPU
    .venv/bin/python bench/bench_priming.py --device cuda --pairs 6400 --batch-size 256 --threads 16
"""

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Caption vocabulary (one string: the captions only need realistic token counts).
CAPTION_WORDS = (
    "a an the man woman dog cat two people street table red blue small large sitting "
    "standing next to on in with of near holding riding playing white black green tree car "
    "bus train plate food field water beach grass building city snow kitchen room bench bike "
    "horse kite ball"
)


def synthetic_pairs(n_pairs: int, n_images: int, seed: int = 0) -> list[tuple[str, bytes, str]]:
    """(image_key, jpeg_bytes, caption) with every image used once, then the rest spread at random."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    images = []
    for i in range(n_images):
        # Smooth colour gradients plus noise: JPEG sizes and decode times like photographs'.
        y, x = np.mgrid[0:480, 0:640]
        base = np.stack([(x * rng.uniform(0.1, 0.4) + y * rng.uniform(0.1, 0.4)) % 256 for _ in range(3)], axis=-1)
        pixels = np.clip(base + rng.normal(0, 20, size=base.shape), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=85)
        images.append((f"sha-{i:06d}", buffer.getvalue()))
    owners = list(range(n_images)) + list(rng.integers(0, n_images, size=max(0, n_pairs - n_images)))
    owners = owners[:n_pairs]
    rng.shuffle(owners)
    pairs = []
    for owner in owners:
        caption = " ".join(rng.choice(CAPTION_WORDS.split(), size=int(rng.integers(8, 15))))
        pairs.append((images[owner][0], images[owner][1], caption))
    return pairs


class Clock:
    """Wall time, and CPU time of the whole process (all threads): on a machine shared with
    other jobs the CPU time is the steadier of the two."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def elapsed(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_priming(scorer, pairs, batch_size):
    from scoring.pictures import StoredImage

    items = [(key, StoredImage(read=lambda data=data: data), caption, None) for key, data, caption in pairs]
    sync(str(scorer.device))
    clock = Clock()
    results = scorer.score_pairs(items, batch_size=batch_size)
    sync(str(scorer.device))
    elapsed = clock.elapsed()
    assert all(r.error is None for r in results)
    return elapsed


def run_plain_loop(model, preprocess, tokenizer, pairs, device, input_dtype):
    import torch
    from PIL import Image

    from scoring.priming.clipscore import clip_s, prompt_for

    clock = Clock()
    with torch.inference_mode():
        for _key, data, caption in pairs:
            image = preprocess(Image.open(io.BytesIO(data))).unsqueeze(0).to(device, input_dtype)
            image_features = model.encode_image(image).float().cpu().numpy()
            text_features = model.encode_text(tokenizer([prompt_for(caption)]).to(device)).float().cpu().numpy()
            clip_s(image_features, text_features)
    return clock.elapsed()


def run_reference_batched(model, preprocess, tokenizer, pairs, device, input_dtype, batch_size):
    import torch
    from PIL import Image

    from scoring.priming.clipscore import clip_s, prompt_for

    clock = Clock()
    image_out, text_out = [], []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i : i + batch_size]
            images = torch.stack([preprocess(Image.open(io.BytesIO(data))) for _, data, _ in chunk])
            image_out.append(model.encode_image(images.to(device, input_dtype)).float().cpu().numpy())
            tokens = tokenizer([prompt_for(caption) for _, _, caption in chunk]).to(device)
            text_out.append(model.encode_text(tokens).float().cpu().numpy())
    clip_s(np.concatenate(image_out), np.concatenate(text_out))
    return clock.elapsed()


def run_forward_bound(model, preprocess, tokenizer, pairs, device, input_dtype, batch_size, trim):
    """Forward passes only, over the batches score_pairs forms: distinct images in order of first
    appearance, distinct prompts sorted by token length."""
    import torch
    from PIL import Image

    from scoring.priming.clip_scorer import encode_text_trimmed
    from scoring.priming.clipscore import prompt_for

    seen = {}
    for key, data, _ in pairs:
        seen.setdefault(key, data)
    images = [preprocess(Image.open(io.BytesIO(data))) for data in seen.values()]
    image_batches = [
        torch.stack(images[i : i + batch_size]).to(device, input_dtype) for i in range(0, len(images), batch_size)
    ]
    prompts = list(dict.fromkeys(prompt_for(caption) for _, _, caption in pairs))
    tokens = tokenizer(prompts)
    tokens = tokens[tokens.argmax(dim=-1).argsort()]
    text_batches = [tokens[i : i + batch_size].to(device) for i in range(0, len(tokens), batch_size)]
    encode_text = (lambda t: encode_text_trimmed(model, t)) if trim else model.encode_text
    sync(device)
    clock = Clock()
    with torch.inference_mode():
        for batch in image_batches:
            model.encode_image(batch).float().cpu()
        for batch in text_batches:
            encode_text(batch).float().cpu()
    sync(device)
    return clock.elapsed()


def arguments() -> argparse.Namespace:
    """The command line; its defaults are the CPU run of the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=320)
    parser.add_argument("--images", type=int, default=None, help="distinct images (default: pairs / 1.6)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of all methods; the fastest round counts")
    parser.add_argument("--plain-pairs", type=int, default=48, help="pairs timed in the one-at-a-time loop (b)")
    parser.add_argument("--reference-pairs", type=int, default=160, help="pairs timed in (b')")
    parser.add_argument("--decode-workers", type=int, default=None, help="ClipScorer decode threads")
    return parser.parse_args()


def main() -> None:
    args = arguments()

    import open_clip
    import torch

    from scoring.priming.clip_scorer import ClipScorer

    torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    precision = "fp16" if device.startswith("cuda") else "fp32"
    input_dtype = torch.float16 if precision == "fp16" else torch.float32
    decode_workers = args.decode_workers
    if decode_workers is None:
        decode_workers = min(8, os.cpu_count() or 1) if device.startswith("cuda") else 0
    n_images = args.images or round(args.pairs / 1.6)
    bs = args.batch_size

    pairs = synthetic_pairs(args.pairs, n_images)
    torch.manual_seed(0)
    model = open_clip.create_model(args.model, pretrained=None, precision=precision, device=device).eval()
    tokenizer = open_clip.get_tokenizer(args.model)

    def new_scorer(tensor_decode: bool):
        return ClipScorer.from_model(
            model,
            model_name=args.model,
            device=device,
            precision=precision,
            decode_workers=decode_workers,
            tensor_decode=tensor_decode,
        )

    preprocess = new_scorer(False).preprocess
    print(f"{args.model} random weights on {device} ({precision}), torch threads {torch.get_num_threads()}")
    print(f"{len(pairs)} pairs over {len({k for k, _, _ in pairs})} images, batch size {bs}, ", end="")
    print(f"decode workers {decode_workers}, best of {args.repeats} rounds")

    # Warm-up (allocator, kernels, nvJPEG) outside the timed runs.
    for tensor_decode in (True, False):
        run_priming(new_scorer(tensor_decode), synthetic_pairs(8, 4, seed=1), 4)
    run_forward_bound(model, preprocess, tokenizer, pairs[:8], device, input_dtype, 4, trim=False)

    encoders = (model, preprocess, tokenizer)
    sizes, times, scorer = measured_rounds(args, pairs, new_scorer, encoders, device, input_dtype)
    report(sizes, times, scorer, device)


def measured_rounds(args, pairs, new_scorer, encoders: tuple, device: str, input_dtype) -> tuple[dict, dict, object]:
    """Each method once per round, rounds interleaved: the machine is shared, and the fastest round
    is the least disturbed measurement of each. The pairs each method timed, each round's (wall,
    CPU) times by method, and the last scorer of (a) (whose counters the report shows)."""
    bs = args.batch_size
    plain, reference = pairs[: args.plain_pairs], pairs[: args.reference_pairs]
    sizes = {"a": len(pairs), "a0": len(pairs), "b": len(plain), "b2": len(reference), "c": len(pairs)}
    sizes["c2"] = len(pairs)
    times: dict[str, list[tuple[float, float]]] = {key: [] for key in sizes}
    for round_number in range(args.repeats):
        load = os.getloadavg()[0]
        times["c"].append(run_forward_bound(*encoders, pairs, device, input_dtype, bs, trim=True))
        scorer = new_scorer(True)
        times["a"].append(run_priming(scorer, pairs, bs))
        times["a0"].append(run_priming(new_scorer(False), pairs, bs))
        times["c2"].append(run_forward_bound(*encoders, pairs, device, input_dtype, bs, False))
        times["b2"].append(run_reference_batched(*encoders, reference, device, input_dtype, bs))
        times["b"].append(run_plain_loop(*encoders, plain, device, input_dtype))
        shown = ", ".join(f"{key} {sizes[key] / t[-1][0]:.2f}" for key, t in times.items())
        print(f"round {round_number + 1} (load average {load:.2f}) pairs/s: {shown}")
    return sizes, times, scorer


def report(sizes: dict[str, int], times: dict[str, list[tuple[float, float]]], scorer, device: str) -> None:
    """Each method's best round in pairs/s (wall and CPU time), the ratios the goals are on, and the goals."""
    wall = {key: sizes[key] / min(w for w, _ in t) for key, t in times.items()}
    cpu = {key: sizes[key] / min(c for _, c in t) for key, t in times.items()}
    print(f"images encoded by (a): {scorer.images_encoded} in {scorer.image_encoder_calls} batches")
    print("                                                          pairs/s   pairs per CPU-second")
    labels = {
        "a": f"(a)  priming path, JPEGs decoded on {device} ({sizes['a']} pairs)",
        "a0": "(a0) priming path, JPEGs decoded by Pillow on the CPU",
        "b": f"(b)  plain loop, one pair at a time ({sizes['b']} pairs)",
        "b2": f"(b') reference-style batches, no reuse ({sizes['b2']} pairs)",
        "c": "(c)  forward-pass bound, same batches as (a)",
        "c2": "(c') forward-pass bound, encode_text on 77 tokens",
    }
    for key, label in labels.items():
        print(f"{label:<56} {wall[key]:8.2f} {cpu[key]:14.2f}")
    print("ratios                                                    wall      CPU time")
    ratios = [
        ("(a)/(b)  (goal >= 1.3x)", "a", "b", "x", 1),
        ("(a)/(b')", "a", "b2", "x", 1),
        ("(a)/(a0) device decode over CPU decode", "a", "a0", "x", 1),
        (f"(a)/(c)  device-decode path's share of the bound ({device})", "a", "c", "%", 100),
        ("(a0)/(c) CPU-decode path's share of the bound", "a0", "c", "%", 100),
        ("(a)/(c') of the bound with untrimmed text", "a", "c2", "%", 100),
    ]
    for label, top, key, unit, scale in ratios:
        shown = f"{scale * wall[top] / wall[key]:8.2f}{unit} {scale * cpu[top] / cpu[key]:12.2f}{unit}"
        print(f"{label:<56} {shown}")
    print("goals: (a)/(b) >= 1.3x; CPU: (a)/(c) >= 90%; one H100: (a) >= 5000 pairs/s")


if __name__ == "__main__":
    main()
