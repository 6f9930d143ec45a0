"""The priming registry is the one list of scorers: a stored prime names its scorer by an
identifier the registry checks when the prime is written."""

import pytest
from django.db.migrations.loader import MigrationLoader

from scoring.models import ModelRating
from scoring.priming.registry import (
    DEMO_METRIC,
    EXPLAINED_METRICS,
    METRIC_LABELS,
    SCORERS,
    metric_checked,
    scorer_class,
)


def test_each_scorer_of_the_registry_is_a_metric_of_its_own_that_a_prime_can_store():
    metrics = [scorer.metric for scorer in SCORERS]
    assert len(set(metrics)) == len(metrics)
    assert list(METRIC_LABELS) == [*metrics, DEMO_METRIC]
    field = ModelRating._meta.get_field("metric")
    for scorer in SCORERS:
        assert len(scorer.metric) <= field.max_length
        assert METRIC_LABELS[scorer.metric] == scorer.label != ""
        assert scorer_class(scorer.metric) is scorer
        assert metric_checked(scorer.metric) == scorer.metric


def test_a_metric_no_scorer_produces_is_refused():
    with pytest.raises(KeyError, match="no priming scorer produces the metric 'clip'"):
        scorer_class("clip")
    with pytest.raises(ValueError, match="no priming scorer produces the metric 'clip': one of clip_s, "):
        metric_checked("clip")


def test_every_metric_a_stored_prime_may_hold_stays_known():
    # What any earlier schema allowed may be in the table: a scorer renamed or left out of the
    # registry would leave those primes with a value the admin and the exports cannot name.
    loader = MigrationLoader(None, ignore_no_migrations=True)
    ever_allowed = set()
    for node in loader.graph.nodes:
        if node[0] == "scoring":
            model = loader.project_state(node).apps.get_model("scoring", "ModelRating")
            ever_allowed.update(value for value, _ in model._meta.get_field("metric").choices or ())
    assert ever_allowed
    assert ever_allowed <= set(METRIC_LABELS)


def test_a_new_scorer_needs_no_migration():
    # The stored value is an identifier, not a choice: the schema does not list the scorers.
    assert not ModelRating._meta.get_field("metric").choices


def test_only_the_fleur_scorers_give_reasons_that_the_export_keeps():
    # FLEUR's follow-up prompt, "Why? Tell me the reason." (seed 002); the CLIP family and the
    # learned predictor give a number only.
    assert sorted(EXPLAINED_METRICS) == ["fleur", "ref_fleur"]
