"""A whole study on Prolific, end to end (issue 34, item 6): simulated participants come through
Prolific links, each with its own browser session, and play over HTTP until the site ends their
session (the quota, or the screen-out before the game); the researcher then approves and pays
through Prolific's API, against the local server that speaks it, with failures injected. Every
acknowledged rating is stored, none is taken after a session ended, no one is screened out after
a game rating, and every participant is paid the pay report's bonus to the cent, once."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotators.models import BonusBatch, Participation, SessionOutcome
from annotators.study.ledger import LedgerError, batch_resolve, bonus_run, submissions_sync
from annotators.study.prolific import Prolific
from annotators.study.report import pay_period, pay_report
from ratinggame.models import Rating, game_ratings
from tests.acks import acknowledged, stored_ratings
from tests.annotators.study.fake_prolific import FakeProlific
from tests.ratinggame.api_helpers import researcher
from tests.tools.crowd_helpers import SEED, live_concurrency, prime_like_a_model
from tools.simulator.crowd import CrowdConfig, crowd_simulate
from tools.simulator.report import format_report

PARTICIPANTS, PAIRS, QUOTA = 6, 60, 12  # 4 honest participants and 2 careless ones


@pytest.mark.django_db(transaction=True)
def test_a_whole_prolific_study_from_entry_to_the_last_bonus(live_server, fast_server, settings):
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "QUOTA_RATINGS": QUOTA,
        "SCREEN_OUT_ROUNDS": 1,
        "COMPLETION_CODE": "C0MPLETE",
        "SCREEN_OUT_CODE": "SCREEN0UT",
        "PAY_PER_POINT": Decimal("0.05"),
        "OPEN_SIGNUP": False,
    }
    config = CrowdConfig(
        server=live_server.url,
        raters=PARTICIPANTS - 2,
        pairs=PAIRS,
        seed=SEED,
        concurrency=live_concurrency(),
        admin_token=Token.objects.create(user=researcher()).key,
        setup=True,
        retry_seconds=5,
        prolific=PARTICIPANTS,
        share=10 * PAIRS,  # no share of their own: they rate until the site ends their session
        careless=2,  # at random from the first pair: the tutorial and the probation round failed
    )
    result = crowd_simulate(config, after_setup=prime_like_a_model)
    print(format_report(result.report))
    report = result.report
    assert report["errors"] == {} and report["gave_up"] == {}
    assert acknowledged(result.acks) == stored_ratings()
    outcomes = {o.participant_id: o for o in result.outcomes}
    assert all(o.ended == "session_ended" for o in outcomes.values()), [o.ended for o in outcomes.values()]
    ended = dict(Participation.objects.values_list("external_id", "outcome"))
    assert ended == {pid: o.session_outcome for pid, o in outcomes.items()}
    assert set(ended.values()) == {SessionOutcome.COMPLETED, SessionOutcome.SCREENED_OUT}  # the seed gives both
    for participation in Participation.objects.select_related("profile__user"):
        counted = Rating.objects.filter(game_ratings(), rater=participation.profile.user, excluded=False).count()
        code = outcomes[participation.external_id].session_code
        if participation.outcome == SessionOutcome.COMPLETED:
            assert (counted, code) == (QUOTA, "C0MPLETE")  # the rating that ended it was the last taken
        else:
            assert (counted, participation.profile.game_entered_at, code) == (0, None, "SCREEN0UT")

    with FakeProlific() as prolific:
        for pid in outcomes:
            prolific.submission(pid)
        settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "PROLIFIC_STUDY_ID": config.study_id}
        api = Prolific(token=prolific.token, base_url=prolific.url, timeout=0.5, sleep=lambda seconds: None)
        approval = submissions_sync(api, approve=True, now=timezone.now())
        completed = {pid for pid, outcome in ended.items() if outcome == SessionOutcome.COMPLETED}
        assert set(approval.approvable) == completed and set(approval.not_completed) == set(ended) - completed
        # The bonus: its set-up fails once (a server error), its pay call's answer is lost once.
        prolific.fault("bonus", "500")
        prolific.fault("pay", "dropped")
        day = timezone.now().date()
        with pytest.raises(LedgerError, match="counts as paid"):
            bonus_run(up_to=day, by=None, now=timezone.now(), api=api)
        with pytest.raises(LedgerError, match="already sent"):
            bonus_run(up_to=day, by=None, now=timezone.now(), api=api)
        batch_resolve(BonusBatch.objects.get(), paid=True, now=timezone.now())  # Prolific shows it paid
        with pytest.raises(LedgerError, match="Nothing is owed"):
            bonus_run(up_to=day, by=None, now=timezone.now(), api=api)
        start, end = pay_period(day - timedelta(days=1), day)
        due = {r.participant_id: r.platform_bonus for r in pay_report(start=start, end=end).rows if r.platform_bonus}
        assert due and prolific.paid_to() == due
        assert len(prolific.payments) == len(due)  # each participant paid once
