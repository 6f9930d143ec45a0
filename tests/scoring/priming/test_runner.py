"""Model priming of game pairs (SPEC section 4; VICR paper section 3.2: "two initial ratings were primed").

A tiny random open_clip model is saved as a checkpoint folder and loaded through
RATINGGAME_PRIMING_MODEL, the path users take. Expected primes follow the documented default
calibration, written out by hand here: rating = clip(1 + 8 * (raw - 0.5), 1, 5).
"""

import io
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from annotators.models import RaterState
from ratinggame.models import CaptionPair, Pool, PrimingStatus
from scoring.models import Calibration, ModelRating
from scoring.priming import runner as prime_runner
from scoring.priming.configuration import PrimingModels, loaded_models_clear
from scoring.tasks import prime_pairs, sweep_pending_priming
from tests.ratinggame.journey_helpers import Clock, rate_next, rater
from tests.scoring.priming.modules import needs_module
from tests.scoring.priming.priming_helpers import hand_default, make_pairs, prime_counts, primes_of

needs_module("open_clip", reason="open_clip is not installed (model priming runs on workers)")

pytestmark = pytest.mark.django_db


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
        assert "`" not in pair.priming_error  # words for the import report and the admin, not markup
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
    assert sorted(prime_counts(ids).values()) == [2] * 5
