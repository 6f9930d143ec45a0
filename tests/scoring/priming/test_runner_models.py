"""Priming with the other models the registry offers (SPEC section 4): FLEUR and RefFLEUR, PAC-S,
the learned predictor's slot, and images in unusual modes."""

from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from ratinggame.models import CaptionPair, PrimingStatus
from scoring.models import Calibration, ModelRating
from scoring.pictures import image_loader
from scoring.priming import runner as prime_runner
from scoring.priming.clip_metrics import clip_identity
from scoring.priming.configuration import PrimingModels, loaded_models_clear
from scoring.tasks import prime_pairs
from tests.scoring.priming.modules import needs_module
from tests.scoring.priming.priming_helpers import hand_default, make_pairs, primes_of
from tests.scoring.priming.tiny_clip import embedded

needs_module("open_clip", reason="open_clip is not installed (model priming runs on workers)")

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_fleur(priming, tiny_llava_dir):
    priming.RATINGGAME = {**priming.RATINGGAME, "PRIMING_FLEUR_MODEL": str(tiny_llava_dir)}
    loaded_models_clear()
    yield priming
    loaded_models_clear()


def test_fleur_takes_its_slots_from_the_registrys_order(with_fleur):
    plain = make_pairs([1])
    with_refs = make_pairs([1], references=["a dog on grass", "a brown dog"])
    assert prime_pairs.delay([p.pk for p in plain + with_refs]).get()["primed"] == 2
    # Least to most trusted: CLIP-S, RefCLIP-S, FLEUR, RefFLEUR (the predictor is not active).
    assert [r[1] for r in primes_of(plain[0])] == ["clip_s", "fleur"]
    assert [r[1] for r in primes_of(with_refs[0])] == ["fleur", "ref_fleur"]
    for row in ModelRating.objects.filter(metric__in=["fleur", "ref_fleur"]):
        # The tiny LLaVA answers "0.85" with digit probabilities that smooth to ~0.70.
        assert 0.6 < row.raw_score < 0.8
        assert row.value == pytest.approx(1 + 4 * row.raw_score)  # the default map: 0 -> 1, 1 -> 5
        assert row.calibration.method == Calibration.Method.DEFAULT
        assert row.model_identity.startswith(str(with_fleur.RATINGGAME["PRIMING_FLEUR_MODEL"]))
        assert row.explanation == ""  # not asked for


def test_explanations_are_stored_with_the_fleur_primes_on_request(with_fleur, capsys):
    pairs = make_pairs([1]) + make_pairs([1], references=["a dog on grass"])
    call_command("prime_pairs", "--explain")
    assert "2 pair(s): 2 primed" in capsys.readouterr().out
    explained = dict(ModelRating.objects.values_list("metric", "explanation").distinct())
    # The tiny LLaVA answers its follow-up question ("Why? Tell me the reason.") with "0.85" too.
    assert explained == {"clip_s": "", "fleur": "0.85", "ref_fleur": "0.85"}
    assert set(CaptionPair.objects.filter(pk__in=[p.pk for p in pairs]).values_list("priming_status", flat=True)) == {
        PrimingStatus.DONE
    }


def test_pairs_are_primed_without_fleur_when_the_model_does_not_answer_with_a_score(priming, tmp_path, caplog):
    from tests.scoring.priming.tiny_llava import save_tiny_llava

    rambling = save_tiny_llava(tmp_path / "random-llava", answer=False)
    priming.RATINGGAME = {**priming.RATINGGAME, "PRIMING_FLEUR_MODEL": str(rambling)}
    loaded_models_clear()
    (pair,) = make_pairs([1])
    assert prime_runner.run_priming([pair.pk])["primed"] == 1
    assert [r[1] for r in primes_of(pair)] == ["clip_s", "clip_s"]
    assert "primed without FLEUR: the model's answer" in caplog.text


def test_a_bad_fleur_model_stops_the_command_before_any_pair_changes(priming, tmp_path):
    from django.core.management import CommandError

    make_pairs([1, 1])
    before = list(CaptionPair.objects.order_by("pk").values("priming_status", "priming_error", "priming_claimed_at"))
    with pytest.raises(CommandError) as caught:
        call_command("prime_pairs", "--fleur-model", str(tmp_path / "no-such-llava"))
    assert "no pair was changed" in str(caught.value) and "FLEUR model folder not found" in str(caught.value)
    assert list(CaptionPair.objects.order_by("pk").values("priming_status", "priming_error", "priming_claimed_at")) == (
        before
    )
    assert not ModelRating.objects.exists()


TINY_NAME = "ratinggame-tiny-clip"


@pytest.fixture(scope="session")
def tiny_pacs(tiny_dir, tmp_path_factory):
    """The tiny architecture registered by name, and a PAC-S style checkpoint of its weights
    ({"state_dict": ...} saved from DataParallel, as aimagelab/pacscore releases them)."""
    import json

    import open_clip
    import torch
    from safetensors.torch import load_file

    from tests.scoring.priming.tiny_clip import TINY_CFG

    root = tmp_path_factory.mktemp("pacs")
    (root / f"{TINY_NAME}.json").write_text(json.dumps(TINY_CFG))
    open_clip.add_model_config(root / f"{TINY_NAME}.json")
    weights = load_file(str(tiny_dir / "open_clip_model.safetensors"))
    path = root / "pacs_tiny.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in weights.items()}, "epoch": 1}, path)
    return path


def plain_clip_s(tiny_dir, pairs: list[CaptionPair]) -> list[float]:
    """CLIP-S (w = 2.5) of the pairs by the tiny model, through a scorer of its own."""
    from scoring.priming.clip_checkpoints import load_scorer

    scorer = load_scorer(str(tiny_dir), device="cpu")
    return [
        s.clip_s
        for s in scorer.score_pairs([(p.image.sha256, image_loader(p.image.file), p.caption, None) for p in pairs])
    ]


def test_pacs_checkpoint_from_the_settings_primes_with_w_2(settings, tiny_dir, tiny_pacs):
    settings.RATINGGAME = {
        **settings.RATINGGAME,
        "PRIMING_MODEL": TINY_NAME,
        "PRIMING_PRETRAINED": "",
        "PRIMING_PACS_CHECKPOINT": str(tiny_pacs),
    }
    loaded_models_clear()
    pairs = make_pairs([2, 1])
    assert prime_pairs.delay([p.pk for p in pairs]).get()["primed"] == 3
    expected = [2.0 / 2.5 * value for value in plain_clip_s(tiny_dir, pairs)]  # same weights, w = 2.0
    assert max(expected) > 0
    rows = list(ModelRating.objects.filter(slot=1).order_by("pair_id"))
    assert [r.metric for r in rows] == ["pac_s"] * 3
    assert [r.raw_score for r in rows] == pytest.approx(expected, abs=1e-5)
    assert all("w=2.0" in r.model_identity for r in rows)
    loaded_models_clear()


def test_pacs_checkpoint_on_the_command_line(settings, tiny_dir, tiny_pacs, capsys):
    from django.core.management import call_command

    # The settings name another model: --model takes none of their weights, --pacs-checkpoint adds PAC-S.
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": str(tiny_dir), "PRIMING_PRETRAINED": "x.pt"}
    loaded_models_clear()
    pairs = make_pairs([1])
    call_command("prime_pairs", "--model", TINY_NAME, "--pacs-checkpoint", str(tiny_pacs), "--device", "cpu")
    out = capsys.readouterr().out
    assert "w=2.0" in out and "1 pair(s): 1 primed" in out
    (row, _) = ModelRating.objects.filter(pair=pairs[0]).order_by("slot")
    assert row.metric == "pac_s" and row.raw_score == pytest.approx(0.8 * plain_clip_s(tiny_dir, pairs)[0], abs=1e-5)
    loaded_models_clear()


def save_predictor(base_identity: str, *, active: bool, bias: float):
    """A stored PredictorRun with a random MLP whose outputs sit around ``bias`` (inside 1-5)."""
    import torch
    from django.conf import settings as django_settings

    from scoring.models import PredictorRun
    from scoring.priming import model_vicr as predictor

    torch.manual_seed(7)
    model = predictor.build_mlp(64, 0.0)  # tiny model: 32-d image + 32-d text embeddings
    with torch.no_grad():
        model[-1].bias.fill_(bias)
    directory = Path(django_settings.MEDIA_ROOT) / "predictors"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"test-{bias}.pt"
    torch.save({"state_dict": model.state_dict(), "in_dim": 64, "dropout": 0.0}, path)
    run = PredictorRun.objects.create(
        checkpoint=f"predictors/{path.name}", base_model_identity=base_identity, active=active
    )
    return run, model


def test_an_active_predictor_takes_slot_2_the_prime_kept_longest(priming):
    from ratinggame.game.aggregates import in_force
    from scoring.priming import model_vicr as predictor

    scorer = PrimingModels.from_settings().clip()
    identity = clip_identity(scorer)
    run, model = save_predictor(identity, active=True, bias=3.0)
    save_predictor("another model", active=True, bias=4.5)  # trained on another scorer: never used here
    plain = make_pairs([1])
    with_refs = make_pairs([1], references=["a dog on grass"])
    assert prime_pairs.delay([p.pk for p in plain + with_refs]).get()["primed"] == 2

    def expected_prediction(pair):
        image = embedded(scorer, [stored_image(pair)])
        text = scorer.encode_texts([pair.caption])
        return float(np.clip(predictor.predict(model, predictor.features_from_embeddings(image, text)), 1, 5)[0])

    for pair, first_metric in ((plain[0], "clip_s"), (with_refs[0], "ref_clip_s")):
        pair.refresh_from_db()
        rows = list(ModelRating.objects.filter(pair=pair).order_by("slot"))
        assert [r.metric for r in rows] == [first_metric, "predictor"]
        assert rows[1].model_identity == f"run{run.pk}:{identity}"
        assert rows[1].value == pytest.approx(expected_prediction(pair), abs=1e-5)
        assert rows[1].value != pytest.approx(3.0, abs=1e-6)  # the features matter, not just the bias
        assert rows[0].value == pytest.approx(hand_default(rows[0].raw_score))
        # After the first human rating only slot 2, the predictor's, is still in force (SPEC section 4).
        pair.human_count, pair.human_sum, pair.human_sumsq = 1, 4, 16
        assert in_force(pair).total == pytest.approx(4 + rows[1].value)


def test_an_inactive_predictor_is_not_used(priming):
    scorer = PrimingModels.from_settings().clip()
    save_predictor(clip_identity(scorer), active=False, bias=3.0)
    pairs = make_pairs([1]) + make_pairs([1], references=["a dog on grass"])
    prime_pairs.delay([p.pk for p in pairs])
    assert [r[1] for r in primes_of(pairs[0])] == ["clip_s", "clip_s"]
    assert [r[1] for r in primes_of(pairs[1])] == ["clip_s", "ref_clip_s"]


def stored_image(pair):
    return image_loader(pair.image.file)()


def test_a_16_bit_image_is_primed_like_its_8_bit_version(priming):
    from PIL import Image as PILImage

    rng = np.random.default_rng(5)
    grey = np.clip(np.linspace(20, 220, 40)[None, :] + rng.normal(0, 25, (36, 40)), 0, 255).astype(np.uint8)
    pairs = make_pairs([1, 1])  # same caption text on two images
    CaptionPair.objects.filter(pk=pairs[1].pk).update(caption=pairs[0].caption)
    eight, sixteen = PILImage.fromarray(grey), PILImage.fromarray(grey.astype(np.uint16) * 257)
    assert sixteen.mode == "I;16"
    for pair, image in zip(pairs, (eight, sixteen), strict=True):
        image.save(pair.image.file.path, format="PNG")
    assert PILImage.open(pairs[1].image.file.path).mode in ("I;16", "I")
    prime_runner.run_priming([p.pk for p in pairs])
    raw = [primes_of(p)[0][2] for p in pairs]
    assert raw[0] > 0
    assert raw[1] == pytest.approx(raw[0], abs=1e-6)
