"""The priming registry is the one list of scorers: the metrics a prime may carry come from it."""

import pytest
from django.core.exceptions import ValidationError
from django.db.migrations.loader import MigrationLoader

from scoring.models import EXPLAINED_METRICS, Metric, ModelRating
from scoring.priming.registry import SCORERS, scorer_class


def prime(metric: str) -> ModelRating:
    return ModelRating(pair_id=1, slot=1, model_identity="model", metric=metric, raw_score=0.5, value=3.0)


def test_each_scorer_of_the_registry_is_a_metric_of_its_own_that_a_prime_can_store():
    metrics = [scorer.metric for scorer in SCORERS]
    assert len(set(metrics)) == len(metrics)
    assert [choice.value for choice in Metric] == [*metrics, "demo"]
    field = ModelRating._meta.get_field("metric")
    for scorer in SCORERS:
        assert len(scorer.metric) <= field.max_length
        assert Metric(scorer.metric).label == scorer.label != ""
        assert scorer_class(scorer.metric) is scorer
        prime(scorer.metric).clean_fields(exclude=["pair"])


def test_a_metric_no_scorer_produces_is_refused():
    with pytest.raises(KeyError, match="no priming scorer produces the metric 'clip'"):
        scorer_class("clip")
    with pytest.raises(ValidationError, match="is not a valid choice"):
        prime("clip").clean_fields(exclude=["pair"])


def test_every_metric_a_stored_prime_may_hold_stays_a_choice():
    # What any earlier schema allowed may be in the table: a scorer renamed or left out of the
    # registry would leave those primes with a value the admin and the exports cannot name.
    loader = MigrationLoader(None, ignore_no_migrations=True)
    ever_allowed = set()
    for node in loader.graph.nodes:
        if node[0] == "scoring":
            model = loader.project_state(node).apps.get_model("scoring", "ModelRating")
            ever_allowed.update(value for value, _ in model._meta.get_field("metric").choices or ())
    assert ever_allowed
    assert ever_allowed <= set(Metric.values)


def test_only_the_fleur_scorers_give_reasons_that_the_export_keeps():
    # FLEUR's follow-up prompt, "Why? Tell me the reason." (seed 002); the CLIP family and the
    # learned predictor give a number only.
    assert sorted(EXPLAINED_METRICS) == ["fleur", "ref_fleur"]
