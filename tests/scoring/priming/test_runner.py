"""Model priming of game pairs (SPEC section 4; VICR paper section 3.2: "two initial ratings were primed").

A tiny random open_clip model is saved as a checkpoint folder and loaded through
RATINGGAME_PRIMING_MODEL, the path users take. Expected primes follow the documented default
calibration, written out by hand here: rating = clip(1 + 8 * (raw - 0.5), 1, 5).
"""

import io
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

pytest.importorskip("open_clip", reason="open_clip is not installed (model priming runs on workers)")

from annotators.models import RaterState
from ratinggame.models import CaptionPair, Pool, PrimingStatus
from ratinggame.pairs.services import pair_create, pairs_created
from scoring.models import Calibration, ModelRating
from scoring.pictures import image_loader
from scoring.priming import runner as prime_runner
from scoring.priming.clip_metrics import clip_identity
from scoring.priming.registry import PrimingModels, loaded_models_clear
from scoring.tasks import prime_pairs, sweep_pending_priming
from tests.celery_broker import celery_sending_to
from tests.factories import ImageFactory
from tests.live_process import QUIET_WORKER, celery_start, process_group_stop
from tests.ratinggame.journey_helpers import Clock, rate_next, rater
from tests.scoring.priming.tiny_clip import embedded, save_tiny_clip_dir

pytestmark = pytest.mark.django_db


def hand_default(raw: float) -> float:
    return min(max(1 + 8 * (raw - 0.5), 1.0), 5.0)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    return save_tiny_clip_dir(tmp_path_factory.mktemp("priming") / "tiny-clip")


@pytest.fixture
def priming(settings, tiny_dir):
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": str(tiny_dir), "PRIMING_PRETRAINED": ""}
    loaded_models_clear()
    yield settings
    loaded_models_clear()


def make_pairs(captions_per_image: list[int], pool: str = Pool.GAME, references=None) -> list[CaptionPair]:
    """Pairs created the way imports create them: committed, then queued (eager here)."""
    pairs = []
    with transaction.atomic():
        for n, count in enumerate(captions_per_image):
            image = ImageFactory()
            for k in range(count):
                caption = f"caption {k} of image {n} in {pool}"
                pairs.append(
                    pair_create(image=image, caption=caption, source="other", pool=pool, references=references)
                )
        pairs_created([p.pk for p in pairs])
    return pairs


def primes_of(pair: CaptionPair) -> list[tuple]:
    return list(
        ModelRating.objects.filter(pair=pair).order_by("slot").values_list("slot", "metric", "raw_score", "value")
    )


def test_new_game_pairs_get_two_primes_and_tutorial_probation_none(priming, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        game = make_pairs([2, 1])
        with_refs = make_pairs([1], references=["a dog on grass", "a brown dog"])
        others = make_pairs([1], pool=Pool.TUTORIAL) + make_pairs([1], pool=Pool.PROBATION)
    # No broker (eager mode): model work never runs in the process that created the pairs (the
    # web process never imports torch). The pairs wait, saying how to prime them.
    for pair in game + with_refs:
        pair.refresh_from_db()
        assert pair.priming_status == PrimingStatus.PENDING and "manage.py prime_pairs" in pair.priming_error
    call_command("prime_pairs", stdout=io.StringIO(), stderr=io.StringIO())
    for pair in game + with_refs:
        pair.refresh_from_db()
        rows = ModelRating.objects.filter(pair=pair).order_by("slot")
        assert [r.slot for r in rows] == [1, 2]
        assert pair.priming_status == PrimingStatus.DONE and pair.priming_error == ""
        assert pair.primes == [r.value for r in rows]
        assert rows[0].metric == "clip_s"
        for row in rows:
            assert row.value == pytest.approx(hand_default(row.raw_score))
            assert row.calibration.method == Calibration.Method.DEFAULT
            assert str(priming.RATINGGAME["PRIMING_MODEL"]) in row.model_identity
    # Without references nor an active predictor, slot 2 repeats CLIP-S; with references it is RefCLIP-S.
    assert [r[1] for r in primes_of(game[0])] == ["clip_s", "clip_s"]
    assert primes_of(game[0])[0][2:] == primes_of(game[0])[1][2:]
    assert [r[1] for r in primes_of(with_refs[0])] == ["clip_s", "ref_clip_s"]
    for pair in others:
        pair.refresh_from_db()
        assert pair.primes == [] and pair.priming_status == PrimingStatus.NOT_NEEDED
        assert not ModelRating.objects.filter(pair=pair).exists()


def test_duplicate_task_and_rerun_change_nothing(priming):
    pairs = make_pairs([3])
    ids = [p.pk for p in pairs]
    prime_pairs.delay(ids)  # eager
    before = list(ModelRating.objects.order_by("pk").values_list("pk", "pair_id", "slot", "value"))
    assert len(before) == 6
    assert prime_pairs.delay(ids).get() == {"primed": 0, "failed": 0, "skipped": 0, "waiting": 0}
    prime_runner.run_priming(ids, include_failed=True)
    assert list(ModelRating.objects.order_by("pk").values_list("pk", "pair_id", "slot", "value")) == before


def test_stale_claims_are_taken_over_fresh_ones_are_not(priming):
    stale, fresh = make_pairs([2])
    long_ago = timezone.now() - timedelta(seconds=priming.RATINGGAME["PRIMING_STALE_SECONDS"] + 60)
    CaptionPair.objects.filter(pk=stale.pk).update(priming_status=PrimingStatus.RUNNING, priming_claimed_at=long_ago)
    CaptionPair.objects.filter(pk=fresh.pk).update(
        priming_status=PrimingStatus.RUNNING, priming_claimed_at=timezone.now()
    )
    assert prime_runner.run_priming([stale.pk, fresh.pk])["primed"] == 1
    stale.refresh_from_db(), fresh.refresh_from_db()
    assert stale.priming_status == PrimingStatus.DONE and len(stale.primes) == 2
    assert fresh.priming_status == PrimingStatus.RUNNING and fresh.primes == []


def test_each_image_is_decoded_and_encoded_once_per_batch(priming):
    pairs = make_pairs([3, 2, 2])  # 3 images, 7 captions
    CaptionPair.objects.update(priming_status=PrimingStatus.PENDING)
    scorer = PrimingModels.from_settings().clip()
    decoded, encoded, calls, texts = (
        scorer.images_decoded,
        scorer.images_encoded,
        scorer.image_encoder_calls,
        scorer.texts_encoded,
    )
    assert prime_runner.run_priming([p.pk for p in pairs], batch_size=64)["primed"] == 7
    assert scorer.images_decoded - decoded == 3
    assert scorer.images_encoded - encoded == 3
    assert scorer.image_encoder_calls - calls == 1
    assert scorer.texts_encoded - texts == 7


def test_bad_checkpoint_fails_the_pairs_with_a_clear_error_and_the_game_goes_on(settings, tmp_path):
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"this is not a checkpoint")
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": "ViT-B-32", "PRIMING_PRETRAINED": str(bad)}
    loaded_models_clear()
    (pair,) = make_pairs([1])
    prime_pairs.delay([pair.pk])
    pair.refresh_from_db()
    assert pair.priming_status == PrimingStatus.FAILED
    assert pair.priming_error.startswith("priming model could not be loaded:")
    assert str(bad) in pair.priming_error and "not a readable checkpoint" in pair.priming_error
    assert pair.primes == [] and not ModelRating.objects.exists()
    # The game keeps working: the first rater of the unprimed pair is scored 0 (SPEC section 3).
    _, feedback = rate_next(rater(RaterState.GAME), 4, Clock())
    assert feedback.pair_id == pair.pk and feedback.first_rater and feedback.points == 0


def test_without_a_model_new_pairs_wait_visibly_and_are_primed_once_one_is_set(
    settings, tiny_dir, capsys, django_capture_on_commit_callbacks
):
    from django.core.management import call_command

    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": "", "PRIMING_PRETRAINED": ""}
    loaded_models_clear()
    with django_capture_on_commit_callbacks(execute=True):
        waiting = make_pairs([2])  # dispatched on commit (eager): the task finds no model
    for pair in waiting:
        pair.refresh_from_db()
        assert pair.priming_status == PrimingStatus.PENDING and pair.priming_claimed_at is None
        assert "no priming model is configured" in pair.priming_error and "RATINGGAME_" not in pair.priming_error
    assert not ModelRating.objects.exists()
    # A claim left by a worker that died goes back to waiting as well.
    long_ago = timezone.now() - timedelta(seconds=settings.RATINGGAME["PRIMING_STALE_SECONDS"] + 60)
    CaptionPair.objects.filter(pk=waiting[1].pk).update(
        priming_status=PrimingStatus.RUNNING, priming_claimed_at=long_ago, priming_error=""
    )
    assert prime_pairs.delay([waiting[1].pk]).get()["waiting"] == 1
    waiting[1].refresh_from_db()
    assert waiting[1].priming_status == PrimingStatus.PENDING and waiting[1].priming_error.startswith("waiting:")
    # A pair that failed for another reason (e.g. an unreadable image since replaced).
    (failed,) = make_pairs([1])
    CaptionPair.objects.filter(pk=failed.pk).update(priming_status=PrimingStatus.FAILED, priming_error="boom")

    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": str(tiny_dir)}
    # The periodic sweep, a while later, picks up the waiting pairs (not the failed one)...
    an_hour_ago = timezone.now() - timedelta(hours=1)
    CaptionPair.objects.update(created_at=an_hour_ago)
    CaptionPair.objects.filter(priming_claimed_at__isnull=False).update(priming_claimed_at=an_hour_ago)
    assert sweep_pending_priming.delay().get() == 2
    statuses = dict(CaptionPair.objects.values_list("pk", "priming_status"))
    assert statuses == {waiting[0].pk: "done", waiting[1].pk: "done", failed.pk: "failed"}
    assert all(p.priming_error == "" for p in CaptionPair.objects.filter(pk__in=[w.pk for w in waiting]))
    # ... and `manage.py prime_pairs` primes everything unprimed, failed pairs included.
    call_command("prime_pairs", "--pending-only")
    assert CaptionPair.objects.get(pk=failed.pk).priming_status == PrimingStatus.FAILED
    call_command("prime_pairs")
    assert "1 pair(s): 1 primed, 0 failed, 0 skipped" in capsys.readouterr().out
    failed.refresh_from_db()
    assert failed.priming_status == PrimingStatus.DONE and failed.priming_error == "" and len(failed.primes) == 2


def test_the_command_loads_the_model_before_touching_any_pair(priming, tmp_path):
    from django.core.management import CommandError, call_command

    pairs = make_pairs([1, 1])  # pending (the on_commit dispatch does not run here)
    CaptionPair.objects.filter(pk=pairs[1].pk).update(priming_status=PrimingStatus.FAILED, priming_error="earlier")
    before = list(CaptionPair.objects.order_by("pk").values("priming_status", "priming_error", "priming_claimed_at"))
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"not a checkpoint")
    commands = [
        (["--model", "ViT-B-32", "--pretrained", str(bad)], "not a readable checkpoint"),
        (["--model", "ViT-B-32", "--pretrained", "laion9000"], "neither a checkpoint file nor a pretrained tag"),
        (["--model", "no-such-model", "--pretrained", str(bad)], "unknown open_clip model 'no-such-model'"),
        (["--model", "ViT-B-32"], "no weights given for ViT-B-32"),  # the settings' weights are not inherited
        (["--pretrained", str(bad)], "a checkpoint directory brings its own weights"),
    ]
    for arguments, fragment in commands:
        with pytest.raises(CommandError) as caught:
            call_command("prime_pairs", *arguments)
        assert fragment in str(caught.value) and "no pair was changed" in str(caught.value), arguments
        after = list(CaptionPair.objects.order_by("pk").values("priming_status", "priming_error", "priming_claimed_at"))
        assert after == before
    assert not ModelRating.objects.exists()


def test_model_given_on_the_command_line_does_not_inherit_the_settings_weights(settings, tiny_dir, capsys):
    from django.core.management import call_command

    # Settings point at another model with a checkpoint file; the command names a folder model,
    # which brings its own weights: inheriting the settings' file would be refused.
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": "", "PRIMING_PRETRAINED": "/models/other.pt"}
    loaded_models_clear()
    make_pairs([2])
    call_command("prime_pairs", "--model", str(tiny_dir))
    assert "2 pair(s): 2 primed" in capsys.readouterr().out
    # An explicit empty --pretrained overrides the settings' weights when the model comes from them.
    settings.RATINGGAME = {**settings.RATINGGAME, "PRIMING_MODEL": str(tiny_dir)}
    make_pairs([1])
    call_command("prime_pairs", "--pretrained", "")
    assert "1 pair(s): 1 primed" in capsys.readouterr().out
    assert set(CaptionPair.objects.values_list("priming_status", flat=True)) == {PrimingStatus.DONE}


def test_primes_are_what_the_first_rater_is_scored_against(priming):
    (pair,) = make_pairs([1])
    prime_pairs.delay([pair.pk])
    pair.refresh_from_db()
    _, feedback = rate_next(rater(RaterState.GAME), 3, Clock())
    assert feedback.pair_id == pair.pk and not feedback.first_rater
    assert feedback.reference == round(float(np.mean(pair.primes)))


def test_an_undecodable_image_fails_only_its_pair(priming):
    pairs = make_pairs([1, 1])
    broken = pairs[0].image
    Path(broken.file.path).write_bytes(b"not a png at all")
    prime_runner.run_priming([p.pk for p in pairs])
    for pair in pairs:
        pair.refresh_from_db()
    assert pairs[0].priming_status == PrimingStatus.FAILED
    assert "image could not be decoded" in pairs[0].priming_error
    assert pairs[1].priming_status == PrimingStatus.DONE and len(pairs[1].primes) == 2


def test_sweep_requeues_old_pending_and_stale_running_pairs(priming):
    old, stale, new = make_pairs([3])
    CaptionPair.objects.update(priming_status=PrimingStatus.PENDING)
    long_ago = timezone.now() - timedelta(hours=2)
    CaptionPair.objects.filter(pk=old.pk).update(created_at=long_ago)
    CaptionPair.objects.filter(pk=stale.pk).update(priming_status=PrimingStatus.RUNNING, priming_claimed_at=long_ago)
    assert sweep_pending_priming.delay().get() == 2  # `new` is left to its own on_commit dispatch
    statuses = dict(CaptionPair.objects.values_list("pk", "priming_status"))
    assert statuses == {old.pk: PrimingStatus.DONE, stale.pk: PrimingStatus.DONE, new.pk: PrimingStatus.PENDING}


def test_manage_py_prime_pairs_primes_everything_unprimed(priming, capsys):
    from django.core.management import call_command

    pairs = make_pairs([2, 1])
    CaptionPair.objects.update(priming_status=PrimingStatus.PENDING)
    ModelRating.objects.all().delete()
    CaptionPair.objects.update(primes=[])
    call_command("prime_pairs", "--batch-size", "2")
    assert "3 pair(s): 3 primed, 0 failed, 0 skipped" in capsys.readouterr().out
    assert all(len(p.primes) == 2 for p in CaptionPair.objects.filter(pk__in=[p.pk for p in pairs]))


def test_a_batch_is_stored_whole_across_statements(priming):
    from django.db import connection

    pairs = make_pairs([2] * 60)
    # 240 prime rows of 9 values: more than one INSERT holds on SQLite (999 query parameters).
    assert connection.vendor != "sqlite" or connection.ops.bulk_batch_size(["x"] * 9, [None] * 240) < 240
    assert prime_runner.run_priming([p.pk for p in pairs], batch_size=120)["primed"] == 120
    rows = ModelRating.objects.filter(pair__in=pairs)
    assert rows.count() == 240
    assert all(row.value == pytest.approx(hand_default(row.raw_score)) for row in rows)
    for pair in CaptionPair.objects.filter(pk__in=[p.pk for p in pairs]):
        assert pair.priming_status == PrimingStatus.DONE and pair.primes == [r[3] for r in primes_of(pair)]


def test_an_interrupted_run_gives_its_claims_back_and_the_next_run_goes_on(priming):
    pairs = make_pairs([1] * 5)
    ids = [p.pk for p in pairs]
    stored_batches = []

    def stop_after_two(n):
        stored_batches.append(n)
        if len(stored_batches) == 2:
            raise KeyboardInterrupt  # what Ctrl-C or the command's SIGTERM handler raises

    with pytest.raises(KeyboardInterrupt):
        prime_runner.run_priming(ids, batch_size=1, claim_chunk=2, progress=stop_after_two)
    statuses = list(CaptionPair.objects.filter(pk__in=ids).order_by("pk").values_list("priming_status", flat=True))
    # Batches 1-2 stored; batch 3 was claimed (with 4, the next chunk) and being scored: given back.
    assert statuses == ["done", "done", "pending", "pending", "pending"]
    assert ModelRating.objects.count() == 4
    assert prime_runner.run_priming(ids, batch_size=2)["primed"] == 3
    assert sorted(_prime_counts(ids).values()) == [2] * 5


# --- FLEUR and RefFLEUR ----------------------------------------------------------------------


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


# --- PAC-S, the learned predictor's slot, unusual image modes ---------------------------------

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


# --- A real Celery worker on Redis and PostgreSQL --------------------------------------------


def _start_worker(env: dict, log_path: Path) -> subprocess.Popen:
    return celery_start(["worker", "-Q", "gpu", "-c", "1", "--pool", "prefork", *QUIET_WORKER], env, log_path)


def _wait_for(condition, timeout: float, what: str, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
    pytest.fail(f"timed out waiting for {what}; worker log tail:\n{tail}")


def _prime_counts(ids: list[int]) -> dict[int, int]:
    counts = dict.fromkeys(ids, 0)
    for pair_id in ModelRating.objects.filter(pair_id__in=ids).values_list("pair_id", flat=True):
        counts[pair_id] += 1
    return counts


def _worker_env(priming, tiny_dir, stale_seconds: int) -> dict:
    """The environment of a worker or command process on this test's PostgreSQL database."""
    db = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "MEDIA_ROOT": str(priming.MEDIA_ROOT),
        "RATINGGAME_PRIMING_MODEL": str(tiny_dir),
        "RATINGGAME_PRIMING_PRETRAINED": "",
        "RATINGGAME_PRIMING_DEVICE": "cpu",
        "RATINGGAME_PRIMING_STALE_SECONDS": str(stale_seconds),
        "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
    }


def _command_start(env: dict, log_path: Path) -> subprocess.Popen:
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "manage.py", "prime_pairs", "--batch-size", "1"],
            cwd=Path(__file__).resolve().parents[3],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_the_command_stopped_or_killed_goes_on_where_it_stopped(require_postgres, priming, tiny_dir, tmp_path, how):
    stale_seconds = 4
    pairs = make_pairs([1] * 12)
    ids = [p.pk for p in pairs]
    env = _worker_env(priming, tiny_dir, stale_seconds)
    log_path = tmp_path / "command.log"
    # A slowed-down run (test-only sleep before storing each one-pair batch), stopped after its first pair.
    command = _command_start({**env, "RATINGGAME_PRIMING_TEST_SLEEP_SECONDS": "1"}, log_path)
    try:
        _wait_for(lambda: 2 in _prime_counts(ids).values(), 120, "a first primed pair", log_path)
        command.send_signal(getattr(signal, how))
        command.wait(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
    counts = _prime_counts(ids)
    assert set(counts.values()) == {0, 2} and list(counts.values()).count(2) < len(ids)
    running = CaptionPair.objects.filter(pk__in=ids, priming_status=PrimingStatus.RUNNING).count()
    if how == "SIGTERM":
        assert command.returncode == 1 and "interrupted:" in log_path.read_text()
        assert running == 0  # every claim not stored was given back
    else:
        assert 0 < running <= prime_runner.CLAIM_BATCHES  # the batches claimed ahead, until stale
    # A new run primes what waits; after PRIMING_STALE_SECONDS, the stranded claims too.
    time.sleep(stale_seconds + 1 if running else 0)
    rerun = _command_start(env, log_path)
    assert rerun.wait(timeout=300) == 0, log_path.read_text()[-3000:]
    assert set(_prime_counts(ids).values()) == {2}
    assert ModelRating.objects.filter(pair_id__in=ids).count() == 2 * len(ids)


@pytest.fixture
def redis_broker(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    with celery_sending_to(redis_url):
        yield redis_url
    client.flushdb()


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_worker_primes_each_pair_exactly_twice_even_when_killed_mid_batch(
    require_postgres, redis_broker, priming, tiny_dir, tmp_path
):
    stale_seconds = 3
    priming.RATINGGAME = {**priming.RATINGGAME, "PRIMING_STALE_SECONDS": stale_seconds}
    env = {**_worker_env(priming, tiny_dir, stale_seconds), "CELERY_BROKER_URL": redis_broker}
    log_path = tmp_path / "worker.log"

    # 1. Pairs created the normal way are dispatched on commit and primed by the worker.
    worker = _start_worker(env, log_path)
    try:
        pairs = make_pairs([2, 1, 1])
        ids = [p.pk for p in pairs]
        _wait_for(lambda: set(_prime_counts(ids).values()) == {2}, 120, "the first pairs to be primed", log_path)
        # A duplicate message changes nothing.
        prime_pairs.delay(ids)
        before = list(ModelRating.objects.order_by("pk").values_list("pk", "value"))
        time.sleep(3)
        assert list(ModelRating.objects.order_by("pk").values_list("pk", "value")) == before
    finally:
        process_group_stop(worker)

    # 2. A slowed-down worker (test-only sleep before storing each batch, one pair per batch) is
    # SIGKILLed mid-run.
    slowed = {**env, "RATINGGAME_PRIMING_TEST_SLEEP_SECONDS": "1", "RATINGGAME_PRIMING_BATCH_SIZE": "1"}
    worker = _start_worker(slowed, log_path)
    try:
        batch = make_pairs([2, 2, 2, 2])
        batch_ids = [p.pk for p in batch]
        _wait_for(lambda: sum(c == 2 for c in _prime_counts(batch_ids).values()) >= 1, 120, "a first prime", log_path)
    finally:
        process_group_stop(worker, signal.SIGKILL)
    counts = _prime_counts(batch_ids)
    assert set(counts.values()) <= {0, 2} and 0 in counts.values(), f"not killed mid-batch: {counts}"

    # 3. A new worker; the sweep (Celery beat's job) re-queues the stale claims.
    worker = _start_worker(env, log_path)
    try:
        time.sleep(stale_seconds + 1)
        assert sweep_pending_priming.apply().get() >= 1  # run here, its messages go to Redis
        _wait_for(lambda: set(_prime_counts(batch_ids).values()) == {2}, 120, "the killed batch to finish", log_path)
        time.sleep(2)
    finally:
        process_group_stop(worker)
    assert set(_prime_counts(ids + batch_ids).values()) == {2}
    assert ModelRating.objects.count() == 2 * len(ids + batch_ids)
    for pair in CaptionPair.objects.filter(pk__in=ids + batch_ids):
        assert pair.priming_status == PrimingStatus.DONE
        assert pair.primes == list(
            ModelRating.objects.filter(pair=pair).order_by("slot").values_list("value", flat=True)
        )
