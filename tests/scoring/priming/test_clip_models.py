"""Loading open_clip checkpoints as scorers and scoring pairs (SPEC section 4).

No pretrained weights can be downloaded here, so a tiny randomly initialised open_clip model
(2-layer towers, 64 wide, 32 px images, the standard 49408-token vocabulary and 77-token
context) is saved in each checkpoint format and loaded through `load_scorer`, the path users
take. Expected values come from open_clip's own loader and encoders, scored with
`scoring.priming.clipscore` (whose formulas are checked by hand in test_clipscore.py).
"""

import hashlib
import io
import json
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from scoring.priming.clip_checkpoints import load_scorer
from scoring.priming.clip_scorer import encode_text_trimmed
from scoring.priming.clipscore import clip_s, ref_clip_s
from scoring.priming.scorer import ScorerLoadError
from tests.scoring.priming.modules import needs_module
from tests.scoring.priming.tiny_clip import embedded

torch = needs_module("torch", reason="torch is not installed (model priming runs on worker machines)")
open_clip = needs_module("open_clip", reason="open_clip is not installed (model priming runs on workers)")

TINY = "ratinggame-tiny-clip"
TINY_CFG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
# Another architecture: one vision block fewer, one text block more, a wider embedding.
OTHER = "ratinggame-tiny-clip-other"
OTHER_CFG = {
    "embed_dim": 48,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 3},
}
PROMPT = "A photo depicts "  # CLIPScore's prompt, written out so the tests do not reuse the code's constant


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from safetensors.torch import save_file

    root = tmp_path_factory.mktemp("tiny_clip")
    for name, cfg in ((TINY, TINY_CFG), (OTHER, OTHER_CFG)):
        (root / f"{name}.json").write_text(json.dumps(cfg))
        open_clip.add_model_config(root / f"{name}.json")
    torch.manual_seed(0)
    model = open_clip.create_model(TINY).eval()
    state_dict = {k: v.contiguous() for k, v in model.state_dict().items()}
    files = SimpleNamespace(root=root, model=model, state_dict=state_dict)

    files.pt = root / "tiny.pt"
    torch.save(state_dict, files.pt)
    files.safetensors = root / "tiny.safetensors"
    save_file(state_dict, str(files.safetensors))
    files.directory = root / "tiny-dir"
    files.directory.mkdir()
    config = {"model_cfg": TINY_CFG, "preprocess_cfg": model.visual.preprocess_cfg}
    (files.directory / "open_clip_config.json").write_text(json.dumps(config))
    save_file(state_dict, str(files.directory / "open_clip_model.safetensors"))
    # PAC-S releases a training checkpoint: {"state_dict": {...}} saved from DataParallel.
    files.pacs = root / "pacs.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in state_dict.items()}, "epoch": 3}, files.pacs)
    return files


def synthetic_images(n, seed=0):
    rng = np.random.default_rng(seed)
    images = [Image.fromarray(rng.integers(0, 256, size=(40, 48, 3), dtype=np.uint8)) for _ in range(n)]
    images[-1] = images[-1].convert("L")  # a greyscale image goes through the RGB conversion
    return images


def reference_embeddings(checkpoint, images, texts, quick_gelu=False):
    """Embeddings from open_clip's own loader, preprocessing, tokenizer and encoders."""
    model, _, preprocess = open_clip.create_model_and_transforms(
        TINY, pretrained=str(checkpoint), force_quick_gelu=quick_gelu
    )
    tokenizer = open_clip.get_tokenizer(TINY)
    with torch.no_grad():
        image_features = model.eval().encode_image(torch.stack([preprocess(im) for im in images])).numpy()
        text_features = model.encode_text(tokenizer([PROMPT + t for t in texts])).numpy()
    return image_features, text_features


def counting_loaders(images):
    calls = [0] * len(images)

    def loader(i):
        def load():
            calls[i] += 1
            return images[i]

        return load

    return [loader(i) for i in range(len(images))], calls


CAPTIONS = [
    (0, "a dog runs on the beach"),
    (0, "a brown dog near the sea"),
    (0, "waves"),
    (1, "two people ride bicycles"),
    (1, "a street at night"),
    (2, "a bowl of fruit on a table"),
    (2, "apples"),
]
REFERENCES = {0: ["a dog on a beach", "a dog running by the water"], 2: ["fruit in a bowl"]}


def items_for(loaders, keys=("img-a", "img-b", "img-c")):
    return [(keys[i], loaders[i], caption, REFERENCES.get(i)) for i, caption in CAPTIONS]


def test_state_dict_file_scores_equal_clip_s_of_the_models_own_embeddings(tiny):
    images = synthetic_images(3)
    loaders, _ = counting_loaders(images)
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    results = scorer.score_pairs(items_for(loaders))

    captions = [c for _, c in CAPTIONS]
    refs = sorted({r for rs in REFERENCES.values() for r in rs})
    image_features, text_features = reference_embeddings(tiny.pt, images, captions + refs)
    rows = [i for i, _ in CAPTIONS]
    expected = clip_s(image_features[rows], text_features[: len(captions)], w=2.5)
    assert (expected > 0).any()  # random weights: make sure not every score is the 0 floor
    assert [r.error for r in results] == [None] * 7
    assert [r.clip_s for r in results] == pytest.approx(expected.tolist(), abs=1e-5)

    with_refs = [j for j, (i, _) in enumerate(CAPTIONS) if i in REFERENCES]
    ref_sets = [text_features[[len(captions) + refs.index(r) for r in REFERENCES[CAPTIONS[j][0]]]] for j in with_refs]
    expected_ref = ref_clip_s(image_features[[rows[j] for j in with_refs]], text_features[with_refs], ref_sets)
    assert [results[j].ref_clip_s for j in with_refs] == pytest.approx(expected_ref.tolist(), abs=1e-5)
    assert [results[j].ref_clip_s for j, (i, _) in enumerate(CAPTIONS) if i not in REFERENCES] == [None, None]

    assert scorer.identity["model"] == TINY
    assert scorer.identity["pretrained"] == str(tiny.pt)
    assert scorer.identity["sha256"] == hashlib.sha256(tiny.pt.read_bytes()).hexdigest()
    assert scorer.identity["w"] == 2.5
    assert scorer.identity["quick_gelu"] is False


@pytest.mark.parametrize("source", ["safetensors", "directory", "local-dir"])
def test_safetensors_file_and_checkpoint_directory_load_the_same_weights(tiny, source):
    if source == "safetensors":
        scorer = load_scorer(TINY, str(tiny.safetensors), device="cpu")
    elif source == "directory":
        scorer = load_scorer(str(tiny.directory), device="cpu")
    else:
        scorer = load_scorer(f"local-dir:{tiny.directory}", device="cpu")
    images = synthetic_images(2)
    image_features, text_features = reference_embeddings(tiny.pt, images, ["a cat", "a red car"])
    np.testing.assert_allclose(embedded(scorer, images), image_features, atol=1e-5)
    np.testing.assert_allclose(scorer.encode_texts(["a cat", "a red car"]), text_features, atol=1e-5)


def test_each_image_is_decoded_and_encoded_once_for_all_its_captions(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    loaders, calls = counting_loaders(synthetic_images(3))
    first = scorer.score_pairs(items_for(loaders), batch_size=8)
    # 3 images, 7 captions: 3 images decoded and encoded, in one batch
    assert calls == [1, 1, 1]
    assert (scorer.images_encoded, scorer.image_encoder_calls) == (3, 1)

    again = scorer.score_pairs(items_for(loaders), batch_size=8)
    # the embeddings are cached by image key: no decoding or encoding the second time
    assert calls == [1, 1, 1]
    assert (scorer.images_encoded, scorer.image_cache_hits) == (3, 3)
    assert [r.clip_s for r in again] == [r.clip_s for r in first]


def test_image_features_reuse_the_embeddings_cached_by_score_pairs(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    loaders, calls = counting_loaders(synthetic_images(3))
    scorer.score_pairs(items_for(loaders))
    bad = ("bad", lambda: Image.open(io.BytesIO(b"not an image")), "x", None)
    features, errors = scorer.image_features([*items_for(loaders), bad])
    assert calls == [1, 1, 1]
    assert sorted(features) == ["img-a", "img-b", "img-c"] and list(errors) == ["bad"]
    np.testing.assert_allclose(features["img-b"], embedded(scorer, [synthetic_images(3)[1]])[0], atol=1e-6)


def test_decoding_in_worker_threads_gives_the_same_scores(tiny):
    images = synthetic_images(3)
    loaders, calls = counting_loaders(images)
    sequential = load_scorer(TINY, str(tiny.pt), device="cpu", decode_workers=0).score_pairs(items_for(loaders), 2)
    threaded_scorer = load_scorer(TINY, str(tiny.pt), device="cpu", decode_workers=2)
    threaded = threaded_scorer.score_pairs(items_for(loaders), 2)
    assert [r.clip_s for r in threaded] == pytest.approx([r.clip_s for r in sequential], abs=1e-6)
    assert calls == [2, 2, 2]  # once per scorer
    assert (threaded_scorer.images_encoded, threaded_scorer.image_encoder_calls) == (3, 2)


def test_images_and_texts_are_encoded_in_batches(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    loaders, _ = counting_loaders(synthetic_images(5))
    items = [(f"k{i}", loaders[i], f"caption number {i}", None) for i in range(5)]
    scorer.score_pairs(items, batch_size=2)
    assert (scorer.images_encoded, scorer.image_encoder_calls) == (5, 3)  # batches of 2, 2, 1
    assert (scorer.texts_encoded, scorer.text_encoder_calls) == (5, 3)


def test_the_embedding_cache_is_bounded(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu", cache_size=2)
    loaders, calls = counting_loaders(synthetic_images(3))
    for i in (0, 1, 2, 0):  # the least recently used image (0) was evicted by the third one
        scorer.score_pairs([(f"k{i}", loaders[i], "a caption", None)])
    assert calls == [2, 1, 1]


def test_an_undecodable_image_fails_only_its_own_pairs(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    good = synthetic_images(1)[0].convert("RGB")
    buffer = io.BytesIO()
    good.save(buffer, format="PNG")
    truncated = buffer.getvalue()[:60]  # the header parses, the pixels do not
    items = [
        ("bad", lambda: Image.open(io.BytesIO(b"this is not an image")), "a caption", None),
        ("cut", lambda: Image.open(io.BytesIO(truncated)), "a caption", None),
        ("good", lambda: good, "a caption", None),
        ("bad", lambda: Image.open(io.BytesIO(b"this is not an image")), "another caption", ["a reference"]),
    ]
    results = scorer.score_pairs(items)
    for r in (results[0], results[1], results[3]):
        assert r.clip_s is None and r.ref_clip_s is None
        assert "image could not be decoded" in r.error
    assert results[2].error is None
    assert results[2].clip_s == scorer.score_pairs([("good2", lambda: good, "a caption", None)])[0].clip_s


def test_a_caption_longer_than_the_context_is_truncated_to_77_tokens(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    image = synthetic_images(1)[0]
    long_caption = " ".join(["a small brown dog jumps over the old wooden fence"] * 30)  # ~300 tokens
    assert len(open_clip.get_tokenizer(TINY).encode(PROMPT + long_caption)) > 77
    result = scorer.score_pairs([("k", lambda: image, long_caption, None)])[0]
    image_features, text_features = reference_embeddings(tiny.pt, [image], [long_caption])
    assert result.error is None
    assert result.clip_s == pytest.approx(clip_s(image_features, text_features)[0], abs=1e-5)


def test_cutting_the_padding_leaves_text_embeddings_unchanged(tiny):
    tokenizer = open_clip.get_tokenizer(TINY)
    tokens = tokenizer(["a dog", "a much longer caption about a dog that runs along the beach", "x " * 100])
    with torch.no_grad():
        np.testing.assert_allclose(
            encode_text_trimmed(tiny.model, tokens[:2]).numpy(), tiny.model.encode_text(tokens[:2]).numpy(), atol=1e-5
        )
        np.testing.assert_allclose(
            encode_text_trimmed(tiny.model, tokens).numpy(), tiny.model.encode_text(tokens).numpy(), atol=1e-5
        )


def save_torchscript(tiny, name: str) -> None:
    """The tiny model as a TorchScript archive, the format of OpenAI's CLIP releases."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokens = open_clip.get_tokenizer(TINY)(["a"])
        traced = torch.jit.trace(tiny.model, (torch.zeros(1, 3, 32, 32), tokens), check_trace=False)
        torch.jit.save(traced, str(tiny.root / name))


def test_pacs_checkpoint_loads_nested_prefixed_weights_and_scores_with_w_2(tiny):
    scorer = load_scorer(TINY, str(tiny.pacs), device="cpu", pacs=True)
    assert scorer.w == 2.0 and scorer.identity["w"] == 2.0 and scorer.identity["pac_s"] is True
    images = synthetic_images(2)
    image_features, text_features = reference_embeddings(tiny.pt, images, ["a cat", "a red car"])
    results = scorer.score_pairs([("a", lambda: images[0], "a cat", None), ("b", lambda: images[1], "a red car", None)])
    assert [r.clip_s for r in results] == pytest.approx(clip_s(image_features, text_features, w=2.0).tolist(), abs=1e-5)


def test_openai_checkpoints_get_quick_gelu(tiny):
    # OpenAI releases TorchScript archives; their state also carries input_resolution & co.
    save_torchscript(tiny, "openai-like.pt")
    metadata = dict(tiny.state_dict, input_resolution=torch.tensor(32), context_length=torch.tensor(77))
    torch.save(metadata, tiny.root / "openai-state.pt")

    images = synthetic_images(2)
    image_features, _ = reference_embeddings(tiny.pt, images, ["a"], quick_gelu=True)
    for name in ("openai-like.pt", "openai-state.pt"):
        scorer = load_scorer(TINY, str(tiny.root / name), device="cpu")
        assert scorer.identity["quick_gelu"] is True
        np.testing.assert_allclose(embedded(scorer, images), image_features, atol=1e-5)
    assert load_scorer(TINY, str(tiny.pt), device="cpu", quick_gelu=True).identity["quick_gelu"] is True
    assert load_scorer(TINY, str(tiny.pt), device="cpu").identity["quick_gelu"] is False


def test_bad_sources_raise_scorer_load_error_with_a_clear_message(tiny):
    root = tiny.root
    (root / "random.pt").write_bytes(np.random.default_rng(1).bytes(4096))
    (root / "random.safetensors").write_bytes(np.random.default_rng(2).bytes(4096))
    (root / "truncated.pt").write_bytes(tiny.pt.read_bytes()[:5000])
    torch.save([1, 2, 3], root / "list.pt")
    torch.save(open_clip.create_model(OTHER).state_dict(), root / "other.pt")
    (root / "empty-dir").mkdir()

    cases = [
        ((TINY, str(root / "missing.pt")), [f"checkpoint file not found: {root / 'missing.pt'}"]),
        ((TINY, str(root / "random.pt")), [str(root / "random.pt"), "not a readable checkpoint"]),
        ((TINY, str(root / "random.safetensors")), ["random.safetensors: not a readable checkpoint"]),
        ((TINY, str(root / "truncated.pt")), ["truncated.pt: not a readable checkpoint"]),
        ((TINY, str(root / "list.pt")), ["list.pt: not a checkpoint: expected a state dict, found list"]),
        (
            (TINY, str(root / "other.pt")),
            [
                f"other.pt: keys don't match model {TINY}: 12 missing (e.g. visual.transformer.resblocks.1.",
                "12 unexpected (e.g. transformer.resblocks.2.",
                "2 shape mismatch(es)",
                "text_projection: checkpoint (64, 48) vs model (64, 32)",
            ],
        ),
        ((str(root / "empty-dir"), None), ["empty-dir: no open_clip_config.json"]),
        ((TINY, None), [f"no weights given for {TINY}"]),
        ((TINY, "laion9000"), ["'laion9000' is neither a checkpoint file nor a pretrained tag"]),
        (("no-such-architecture", "x.pt"), ["unknown open_clip model 'no-such-architecture'"]),
    ]
    for (model_name, pretrained), fragments in cases:
        with pytest.raises(ScorerLoadError) as caught:
            load_scorer(model_name, pretrained, device="cpu")
        for fragment in fragments:
            assert fragment in str(caught.value), (model_name, pretrained, str(caught.value))


@pytest.mark.parametrize("precision", ["fp16", "amp"])
def test_half_precision_scores_stay_close_to_fp32(tiny, precision):
    # fp16 is the CUDA default; run here on CPU it checks the casts (inputs, LayerNorm) line up.
    images = synthetic_images(2)
    items = [("a", lambda: images[0], "a cat", ["a kitten"]), ("b", lambda: images[1], "a red car", None)]
    full = load_scorer(TINY, str(tiny.pt), device="cpu", precision="fp32").score_pairs(items)
    half = load_scorer(TINY, str(tiny.pt), device="cpu", precision=precision).score_pairs(items)
    assert half[0].error is None and half[1].error is None
    assert max(r.clip_s for r in full) > 0.1  # not only the 0 floor
    assert [r.clip_s for r in half] == pytest.approx([r.clip_s for r in full], abs=5e-3)
    assert half[0].ref_clip_s == pytest.approx(full[0].ref_clip_s, abs=5e-3)


# --- PAC-S bases and QuickGELU ------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_name", "base", "quick"),
    [
        ("ViT-B-32", None, True),  # PAC-S / PAC-S++ ViT-B/32: fine-tuned from OpenAI's (clip.load)
        ("ViT-L-14", None, True),  # OpenAI-style ViT-L/14 base (PAC-S++)
        ("ViT-L-14", "openai", True),
        ("ViT-L-14", "laion2b_s32b_b82k", False),  # PAC-S's open_clip ViT-L/14 release
        ("ViT-B-32", "laion2b_s34b_b79k", False),
        ("ViT-H-14", None, False),  # no OpenAI release of this architecture
        (TINY, None, False),
    ],
)
def test_pacs_quickgelu_follows_the_base_weights(tiny, model_name, base, quick):
    from scoring.priming.clip_checkpoints import pacs_quick_gelu

    assert pacs_quick_gelu(model_name, base) is quick


def test_pacs_over_an_openai_base_runs_with_quick_gelu(tiny):
    # An OpenAI release is a TorchScript archive: as the base, it makes PAC-S run with QuickGELU.
    save_torchscript(tiny, "openai-base.pt")
    images = synthetic_images(2)
    quick_features, _ = reference_embeddings(tiny.pt, images, ["a"], quick_gelu=True)
    plain_features, _ = reference_embeddings(tiny.pt, images, ["a"], quick_gelu=False)
    assert not np.allclose(quick_features, plain_features, atol=1e-3)  # the activation shows

    over_openai = load_scorer(TINY, str(tiny.pacs), device="cpu", pacs=True, base=str(tiny.root / "openai-base.pt"))
    assert over_openai.identity["quick_gelu"] is True and over_openai.w == 2.0
    np.testing.assert_allclose(embedded(over_openai, images), quick_features, atol=1e-5)
    over_other = load_scorer(TINY, str(tiny.pacs), device="cpu", pacs=True, base=str(tiny.pt))
    assert over_other.identity["quick_gelu"] is False
    np.testing.assert_allclose(embedded(over_other, images), plain_features, atol=1e-5)


def test_pacs_base_and_lora_mistakes_are_clear_errors(tiny):
    with pytest.raises(ScorerLoadError, match="PAC-S base 'laion9000' is neither a pretrained tag"):
        load_scorer(TINY, str(tiny.pacs), device="cpu", pacs=True, base="laion9000")
    with pytest.raises(ScorerLoadError, match="pass pacs=True"):
        load_scorer(TINY, str(tiny.pt), device="cpu", base="openai")
    lora = dict(tiny.state_dict, **{"visual.transformer.resblocks.0.attn.lora_A": torch.zeros(4, 64)})
    torch.save({"state_dict": lora}, tiny.root / "pacs-lora.pth")
    with pytest.raises(ScorerLoadError, match="LoRA adapters"):
        load_scorer(TINY, str(tiny.root / "pacs-lora.pth"), device="cpu", pacs=True)


# --- Image modes --------------------------------------------------------------------------


def grey_ramp(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(np.linspace(10, 240, 48)[None, :] + rng.normal(0, 20, (40, 48)), 0, 255).astype(np.uint8)


def rgb_of(image) -> np.ndarray:
    from scoring.pictures import image_to_rgb

    converted = image_to_rgb(image)
    assert converted.mode == "RGB"
    return np.asarray(converted)


def test_high_bit_depth_grey_is_scaled_to_8_bits_not_clipped():
    grey = grey_ramp()
    expected = np.repeat(grey[:, :, None], 3, axis=2)
    sixteen = Image.fromarray(grey.astype(np.uint16) * 257)
    assert sixteen.mode == "I;16"
    buffer = io.BytesIO()
    sixteen.save(buffer, format="PNG")
    reopened = Image.open(io.BytesIO(buffer.getvalue()))
    assert np.asarray(reopened.convert("RGB")).mean() > 240  # what Pillow alone makes of it: ~white
    for image in (sixteen, reopened, Image.fromarray(grey.astype(np.int32) * 257)):  # "I;16" and "I"
        np.testing.assert_array_equal(rgb_of(image), expected)
    # Float in 0..1 is the unit range; other values are stretched over their actual range.
    np.testing.assert_array_equal(rgb_of(Image.fromarray(grey.astype(np.float32) / 255)), expected)
    stretched = rgb_of(Image.fromarray(grey.astype(np.int32) * 1000 - 70_000))  # negative and > 65535
    low, high = grey.min(), grey.max()
    by_hand = np.rint((grey.astype(float) - low) * 255 / (high - low)).astype(np.uint8)
    np.testing.assert_array_equal(stretched[:, :, 0], by_hand)


def test_transparency_is_composited_on_white_and_cmyk_converted():
    rgba = Image.new("RGBA", (2, 1))
    rgba.putpixel((0, 0), (0, 0, 0, 0))  # fully transparent black: shows white
    rgba.putpixel((1, 0), (255, 0, 0, 128))  # half-transparent red over white
    assert rgb_of(rgba).tolist() == [[[255, 255, 255], [255, 127, 127]]]
    assert rgb_of(rgba.convert("LA")).tolist()[0][0] == [255, 255, 255]
    palette = Image.new("P", (2, 1))
    palette.putpalette([0, 0, 0, 0, 0, 255] + [0] * 762)
    palette.putpixel((0, 0), 0)
    palette.putpixel((1, 0), 1)
    palette.info["transparency"] = 0  # colour 0 (black) is transparent, as in a GIF
    assert rgb_of(palette).tolist() == [[[255, 255, 255], [0, 0, 255]]]
    cmyk = Image.new("CMYK", (1, 1), (255, 0, 0, 0))  # full cyan
    assert rgb_of(cmyk).tolist() == [[[0, 255, 255]]]


def test_exif_orientation_is_applied_as_a_browser_does():
    grey = grey_ramp()
    image = Image.fromarray(grey).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6  # stored rotated: shown after a 90° clockwise turn
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", exif=exif, quality=95)
    shown = rgb_of(Image.open(io.BytesIO(buffer.getvalue())))
    assert shown.shape[:2] == (grey.shape[1], grey.shape[0])


def test_a_16_bit_image_embeds_like_its_8_bit_version(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    grey = grey_ramp(3)
    eight = embedded(scorer, [Image.fromarray(grey)])
    sixteen = embedded(scorer, [Image.fromarray(grey.astype(np.uint16) * 257)])
    np.testing.assert_allclose(sixteen, eight, atol=1e-6)
    loaders = [lambda: Image.fromarray(grey), lambda: Image.fromarray(grey.astype(np.uint16) * 257)]
    eight_score, sixteen_score = scorer.score_pairs(
        [("8", loaders[0], "a cat", None), ("16", loaders[1], "a cat", None)]
    )
    assert sixteen_score.clip_s == pytest.approx(eight_score.clip_s, abs=1e-6)


def test_the_shared_clip_scores_follow_the_batch_size_and_are_forgotten_with_the_models(monkeypatch):
    from scoring.priming import clip_metrics, configuration

    clip = object()  # the loaded open_clip scorer, as PrimingModels.clip returns it
    monkeypatch.setattr(configuration.PrimingModels, "clip", lambda self: clip)
    configuration.loaded_models_clear()
    small = clip_metrics._shared(configuration.PrimingModels(model="m", batch_size=8))
    assert (small.clip, small.batch_size) == (clip, 8)
    assert clip_metrics._shared(configuration.PrimingModels(model="m", batch_size=32)).batch_size == 32
    assert clip_metrics._shared(configuration.PrimingModels(model="m", batch_size=8)) is small
    configuration.loaded_models_clear()  # the model is forgotten: so is what was kept over it
    assert clip_metrics._shared(configuration.PrimingModels(model="m", batch_size=8)) is not small


def test_text_features_reuse_the_captions_score_pairs_just_encoded(tiny):
    scorer = load_scorer(TINY, str(tiny.pt), device="cpu")
    loaders, _ = counting_loaders(synthetic_images(3))
    scorer.score_pairs(items_for(loaders))
    calls, encoded = scorer.text_encoder_calls, scorer.texts_encoded
    captions = [caption for _, caption in CAPTIONS]
    features = scorer.text_features(captions)
    assert (scorer.text_encoder_calls, scorer.texts_encoded) == (calls, encoded)  # nothing encoded again
    np.testing.assert_allclose(features, scorer.encode_texts(captions), atol=1e-6)
    # A caption the last batch did not have is encoded, alone.
    scorer.text_features([*captions, "a caption never scored"])
    assert scorer.texts_encoded == encoded + len(captions) + 1
