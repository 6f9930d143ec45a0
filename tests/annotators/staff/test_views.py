"""Staff pages: permissions on every URL, actions logged with who and why, the dispute queue."""

import re

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from annotators.models import (
    CompetencyAnalysis,
    Dispute,
    DisputeStatus,
    ProbationRound,
    RaterAction,
    RaterProfile,
    RaterState,
)
from annotators.roles import ADMIN, ANNOTATOR, RESEARCHER
from annotators.staff import urls as staff_urls
from tests.factories import (
    CaptionPairFactory,
    ImageFactory,
    ProbationPairFactory,
    RaterProfileFactory,
    UserFactory,
    rating_record,
    user_with_role,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def image():
    return ImageFactory()


@pytest.fixture
def rater(image):
    profile = RaterProfileFactory(state=RaterState.GAME, tutorial_score=14, game_score=10)
    ProbationPairFactory(image=image, expert_rating=2)
    ProbationPairFactory(image=image, expert_rating=4)
    return profile


@pytest.fixture
def dispute(rater, image):
    pair = CaptionPairFactory(image=image, caption="a dog on a red sofa")
    other = RaterProfileFactory(state=RaterState.GAME)
    rating_record(rater=other.user, pair=pair, value=2)
    # Scored -2 against the consensus then (4); against the other rating now (2) it scores 0.
    rating = rating_record(rater=rater.user, pair=pair, value=1, points=-2, reference=4)
    return Dispute.objects.create(rating=rating, comment="The sofa is red, I am sure.")


@pytest.fixture
def staff():
    return UserFactory(username="staffer", is_staff=True)


def staff_urls_all(rater, dispute) -> list[str]:
    """Every URL of annotators.staff.urls, its path parameters filled in."""
    values = {"profile_id": rater.pk, "dispute_id": dispute.pk}
    urls = []
    for pattern in staff_urls.urlpatterns:
        kwargs = {name: values[name] for name in pattern.pattern.converters}
        urls.append(reverse(f"staff:{pattern.name}", kwargs=kwargs))
    return urls


def test_the_url_list_covers_every_pattern(rater, dispute):
    assert len(staff_urls_all(rater, dispute)) == len(staff_urls.urlpatterns) == 8


def test_anonymous_is_sent_to_log_in_on_every_staff_url(client, rater, dispute):
    for url in staff_urls_all(rater, dispute):
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 302, url
            assert response["Location"].startswith(reverse("login") + "?next="), url


@pytest.mark.parametrize("role", [ANNOTATOR, RESEARCHER])
def test_annotators_and_researchers_get_403_on_every_staff_url(client, rater, dispute, role):
    client.force_login(user_with_role(role))
    for url in staff_urls_all(rater, dispute):
        assert client.get(url).status_code == 403, url
        assert client.post(url, {"reason": "x", "decision": "accept", "note": "x"}).status_code == 403, url
    rater.refresh_from_db()
    dispute.refresh_from_db()
    assert rater.state == RaterState.GAME
    assert dispute.status == DisputeStatus.OPEN
    assert not RaterAction.objects.exists()


@pytest.mark.parametrize("who", ["staff", "admin_role"])
def test_staff_and_admin_role_get_200_on_every_staff_url(client, rater, dispute, staff, who):
    client.force_login(staff if who == "staff" else user_with_role(ADMIN))
    for url in staff_urls_all(rater, dispute):
        assert client.get(url).status_code == 200, url


def test_suspend_then_reinstate_back_to_the_previous_state(client, staff, rater):
    client.force_login(staff)
    response = client.post(reverse("staff:rater_suspend", args=[rater.pk]), {"reason": "Rating at random."})
    assert response.status_code == 302
    rater.refresh_from_db()
    assert (rater.state, rater.state_before_suspension) == (RaterState.SUSPENDED, RaterState.GAME)
    action = RaterAction.objects.get()
    assert (action.action, action.actor, action.reason) == ("suspend", staff, "Rating at random.")
    assert (action.from_state, action.to_state) == (RaterState.GAME, RaterState.SUSPENDED)

    client.post(reverse("staff:rater_reinstate", args=[rater.pk]), {"reason": "Explained by email."})
    rater.refresh_from_db()
    assert rater.state == RaterState.GAME
    reinstate = RaterAction.objects.get(action="reinstate")
    assert (reinstate.actor, reinstate.reason, reinstate.to_state) == (staff, "Explained by email.", RaterState.GAME)


def test_reinstate_returns_a_probation_rater_to_probation(client, staff):
    profile = RaterProfileFactory(state=RaterState.PROBATION, tutorial_score=6)
    client.force_login(staff)
    client.post(reverse("staff:rater_suspend", args=[profile.pk]), {"reason": "check"})
    client.post(reverse("staff:rater_reinstate", args=[profile.pk]), {"reason": "ok"})
    profile.refresh_from_db()
    assert profile.state == RaterState.PROBATION


def test_send_to_probation_starts_a_new_round_and_keeps_the_game_score(client, staff, rater):
    ProbationRound.objects.create(profile=rater, number=1, passed=True)
    client.force_login(staff)
    response = client.post(reverse("staff:rater_probation", args=[rater.pk]), {"reason": "Low agreement lately."})
    assert response.status_code == 302
    rater.refresh_from_db()
    assert rater.state == RaterState.PROBATION
    assert rater.game_score == 10
    new_round = rater.probation_rounds.order_by("-number").first()
    assert new_round.number == 2
    assert len(new_round.pair_order) == 2  # both probation pairs
    action = RaterAction.objects.get()
    assert (action.action, action.actor, action.reason) == ("send_to_probation", staff, "Low agreement lately.")
    assert (action.from_state, action.to_state) == (RaterState.GAME, RaterState.PROBATION)


def test_an_action_without_a_reason_changes_nothing(client, staff, rater):
    client.force_login(staff)
    response = client.post(reverse("staff:rater_suspend", args=[rater.pk]), {"reason": "   "})
    assert response.status_code == 400
    rater.refresh_from_db()
    assert rater.state == RaterState.GAME
    assert not RaterAction.objects.exists()


def test_an_action_that_does_not_apply_is_refused_with_a_message(client, staff, rater):
    client.force_login(staff)
    response = client.post(reverse("staff:rater_reinstate", args=[rater.pk]), {"reason": "why not"})
    assert response.status_code == 400
    assert "Only a suspended rater can be reinstated." in response.content.decode()
    assert not RaterAction.objects.exists()


def test_accepting_a_dispute_restores_the_points(client, staff, rater, dispute):
    client.force_login(staff)
    response = client.post(
        reverse("staff:dispute_resolve", args=[dispute.pk]), {"decision": "accept", "note": "Red sofa indeed."}
    )
    assert response.status_code == 302
    dispute.refresh_from_db()
    rater.refresh_from_db()
    assert dispute.status == DisputeStatus.ACCEPTED
    assert dispute.points_restored == 2
    assert (dispute.resolved_by, dispute.resolution_note) == (staff, "Red sofa indeed.")
    assert rater.game_score == 12  # 10 + the 2 points the re-score (0) gives over the score (-2)
    assert dispute.rating.points == -2  # the rating keeps what the game scored
    assert RaterAction.objects.get().action == "dispute_accept"

    # Resolved once only: a second decision is refused and restores nothing more.
    again = client.post(reverse("staff:dispute_resolve", args=[dispute.pk]), {"decision": "accept", "note": "again"})
    assert again.status_code == 400
    assert "already been resolved" in again.content.decode()
    rater.refresh_from_db()
    assert rater.game_score == 12


def test_rejecting_a_dispute_changes_no_score(client, staff, rater, dispute):
    client.force_login(staff)
    client.post(
        reverse("staff:dispute_resolve", args=[dispute.pk]), {"decision": "reject", "note": "Consensus stands."}
    )
    dispute.refresh_from_db()
    rater.refresh_from_db()
    assert (dispute.status, dispute.points_restored, rater.game_score) == (DisputeStatus.REJECTED, 0, 10)


def test_dispute_service_refuses_a_second_resolution(staff, dispute):
    from annotators.staff.services import ActionRefused, dispute_resolve

    dispute_resolve(dispute=dispute, actor=staff, accept=False, note="no")
    with pytest.raises(ActionRefused):
        dispute_resolve(dispute=dispute, actor=staff, accept=True, note="yes")
    assert RaterProfile.objects.get(user=dispute.rating.rater).game_score == 10


def test_dispute_queue_shows_the_pair_rating_consensus_and_comment(client, staff, dispute):
    client.force_login(staff)
    page = client.get(reverse("staff:disputes")).content.decode()
    assert dispute.rating.pair.image.file.url in page
    assert "a dog on a red sofa" in page
    assert "The sofa is red, I am sure." in page
    # The only other rater rated 2: the consensus of the others now, and the rating re-scored.
    assert re.search(r"Consensus of the others now</dt><dd>2</dd>", page)
    assert "+0 against the consensus 2 of 1 other rating. Accepting restores 2 points." in page
    assert 'value="accept"' in page and 'value="reject"' in page  # a counted rating: both decisions


def test_rater_table_sorts_and_filters(client, staff, rater):
    low = RaterProfileFactory(user=UserFactory(username="zed"), state=RaterState.GAME, game_score=3)
    high = RaterProfileFactory(user=UserFactory(username="amy"), state=RaterState.SUSPENDED, game_score=99)
    client.force_login(staff)
    url = reverse("staff:dashboard")

    def names(params):
        page = client.get(url, params).content.decode()
        return re.findall(r'<th scope="row"><a href="/staff/raters/\d+/">([^<]+)</a>', page)

    by_score = names({"sort": "-game_score"})
    assert by_score.index("amy") < by_score.index(rater.user.username) < by_score.index("zed")
    assert names({"sort": "game_score"})[0] == "zed"
    assert names({"state": "suspended"}) == ["amy"]
    assert names({"q": "ZE"}) == ["zed"]
    assert low.pk != high.pk


def test_rater_table_filters_by_flag(client, staff, image):
    straight = RaterProfileFactory(user=UserFactory(username="liner"))
    RaterProfileFactory(user=UserFactory(username="fine"))
    for _ in range(15):
        rating_record(rater=straight.user, pair=CaptionPairFactory(image=image), value=3)
    client.force_login(staff)
    page = client.get(reverse("staff:dashboard"), {"flag": "straight_liner"}).content.decode()
    assert ">liner</a>" in page
    assert ">fine</a>" not in page


def test_rater_page_has_an_accessible_timeline(client, staff, rater, image):
    for value in (2, 4, 4):
        rating_record(rater=rater.user, pair=ProbationPairFactory(image=image, expert_rating=4), value=value)
    client.force_login(staff)
    page = client.get(reverse("staff:rater", args=[rater.pk])).content.decode()
    assert 'role="img"' in page
    assert re.search(r"<title id=\"timeline-title\">[^<]+</title>", page)
    assert "3 ratings in submission order" in page  # the description
    assert "Rating number (submission order)" in page
    assert "Seconds per rating" in page


def test_staff_required_lets_superusers_in(rf, rater):
    from annotators.staff.views import dashboard

    request = rf.get("/staff/")
    request.user = UserFactory(is_superuser=True)
    assert dashboard(request).status_code == 200
    request.user = AnonymousUser()
    assert dashboard(request).status_code == 302


def test_refresh_button_requests_an_analysis(client, staff, django_capture_on_commit_callbacks):
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("staff:competency_refresh"))
    assert response.status_code == 302
    analysis = CompetencyAnalysis.objects.get()
    assert analysis.created_by == staff
    # No rating yet: the run ends as failed, with the reason shown on the dashboard.
    assert analysis.status == CompetencyAnalysis.Status.FAILED
    page = client.get(reverse("staff:dashboard")).content.decode()
    assert "nothing to analyse" in page


@pytest.mark.parametrize("converged", [True, False])
def test_every_view_of_the_analysis_warns_when_the_fit_did_not_converge(client, staff, rater, converged):
    from django.utils import timezone

    CompetencyAnalysis.objects.create(
        status=CompetencyAnalysis.Status.DONE,
        finished_at=timezone.now(),
        n_raters=30,
        abilities={str(rater.pk): [0.4, 0.1]},
        rater_quality={str(rater.pk): 0.73},
        details={"converged": converged, "iterations": 500, "game_items": 10, "median_ability": 0.1},
        regression={"n": 25, "too_few": False, "min_raters": 20, "coef_per_10_percent": 0.2, "converged": converged},
    )
    client.force_login(staff)
    page = client.get(reverse("staff:dashboard")).content.decode()
    assert ("the Partial Credit Model did not converge" in page) is not converged
    assert ("the game-only fit behind the latent\nregression did not converge" in page) is not converged
    assert '<td class="more">73%</td>' in page  # the Dawid-Skene accuracy column (a phone hides it)
    rater_page = client.get(reverse("staff:rater", args=[rater.pk])).content.decode()
    assert ("that fit did not converge" in rater_page) is not converged
    api = client.get(f"/api/admin/raters/{rater.pk}/").json()
    assert api["competency_converged"] is converged and api["rater_quality"] == 0.73


def test_a_staff_member_rating_the_pair_sees_neither_its_ratings_nor_its_consensus(client, staff, rater, dispute):
    """SPEC 5, whatever roles the rater also holds: while staff hold an open assignment for a pair,
    the dispute queue and the rater's page show none of its ratings, and its dispute cannot be
    resolved (the restore would tell the consensus)."""
    from datetime import timedelta

    from django.utils import timezone

    from ratinggame.models import Assignment

    now = timezone.now()
    held = Assignment.objects.create(
        rater=staff, pair=dispute.rating.pair, stage="game", served_at=now, expires_at=now + timedelta(hours=1)
    )
    client.force_login(staff)
    queue = client.get(reverse("staff:disputes")).content.decode()
    assert "You are rating this pair now" in queue
    assert "Consensus of the others now" not in queue and "Re-scored now" not in queue
    assert reverse("staff:dispute_resolve", args=[dispute.pk]) not in queue
    refused = client.post(reverse("staff:dispute_resolve", args=[dispute.pk]), {"decision": "accept", "note": "ok"})
    assert refused.status_code == 400 and "You are rating this pair now" in refused.content.decode()
    assert "already resolved" not in refused.content.decode()
    dispute.refresh_from_db()
    assert dispute.status == DisputeStatus.OPEN
    page = client.get(reverse("staff:rater", args=[rater.pk])).content.decode()
    assert "1 of them is on pairs you are rating now" in page
    assert "a dog on a red sofa" not in page

    # Once rated (the assignment closed), everything shows again.
    Assignment.objects.filter(pk=held.pk).update(submitted_at=now)
    queue = client.get(reverse("staff:disputes")).content.decode()
    assert "Consensus of the others now</dt><dd>2</dd>" in queue
    assert "a dog on a red sofa" in client.get(reverse("staff:rater", args=[rater.pk])).content.decode()
