"""The game for annotators, over JSON: the same services as the HTML pages (ratinggame.game and
annotators.journey), so a script can play the whole journey.

``GET step`` says where the rater is (consent, tutorial, probation, game, suspended) and how
far along; ``POST consent`` records consent; ``POST next`` serves the rater's next pair, or the
one already open (reload-safe); ``POST submit`` with ``{"assignment_id", "value": 1..5}`` stores
the rating and answers its feedback, and with ``"next": true`` the rater's next pair too (one
request per rating); submitting an assignment already rated answers the stored rating's feedback with
``"already_rated": true`` (the value sent again is not taken); ``POST skip`` with ``{"assignment_id"}``
passes the pair without a rating and answers the next one; ``GET feedback/{assignment_id}`` shows it
again.

Times are the server's: anything else in a body (a client's idea of the served time, say) is
ignored, and a rating is accepted from ``min_submit_at`` on. Nothing served before rating
tells the rater another rating, the pair's consensus, its expert rating or a model prime.
"""

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotators import progress, services
from annotators.journey import PLAYING_STEPS, Step
from ratinggame import game
from ratinggame.api import submit_fast
from ratinggame.api.errors import ErrorSerializer, error_response
from ratinggame.api.permissions import IsAnnotator
from ratinggame.models import Pool

TAG = "game"


# --- Answers ----------------------------------------------------------------------------------


# The stages a rater is shown: a control pair is a game pair to them (SPEC 2.5).
SHOWN_STAGES = [(pool.value, pool.label) for pool in (Pool.TUTORIAL, Pool.PROBATION, Pool.GAME)]


class ServedSerializer(serializers.Serializer):
    """A pair served to the rater. Only what the rater may see before rating it: no pair id, which
    would set a control pool imported as a batch of its own apart by its range, and a control met
    again by its repeat (SPEC 2.5). The assignment id names this serve."""

    assignment_id = serializers.IntegerField()
    stage = serializers.ChoiceField(choices=SHOWN_STAGES)
    image_url = serializers.CharField(help_text="Relative to the site, e.g. /media/images/ab/ab12....png")
    image_width = serializers.IntegerField()
    image_height = serializers.IntegerField()
    caption = serializers.CharField()
    served_at = serializers.DateTimeField()
    min_submit_at = serializers.DateTimeField(help_text="The server accepts the rating from this time on.")
    expires_at = serializers.DateTimeField()
    position = serializers.IntegerField(allow_null=True, help_text="1-based place in the tutorial or round.")
    total = serializers.IntegerField(allow_null=True, help_text="Pairs in the tutorial or round; null in the game.")


class NoneLeftSerializer(serializers.Serializer):
    """Nothing is left for this rater to rate right now."""

    code = serializers.ChoiceField(choices=["none_left"])
    message = serializers.CharField()


class WindowSerializer(serializers.Serializer):
    """The qualification window: the first ``size`` game ratings after entering the game need ``needed`` points."""

    count = serializers.IntegerField()
    points = serializers.IntegerField()
    size = serializers.IntegerField()
    needed = serializers.IntegerField()


class FeedbackSerializer(serializers.Serializer):
    """What the rater sees after rating: the points and the reference they were scored against
    (no pair id, as in the serve)."""

    assignment_id = serializers.IntegerField()
    stage = serializers.ChoiceField(choices=SHOWN_STAGES)
    value = serializers.IntegerField()
    points = serializers.IntegerField()
    reference = serializers.IntegerField(
        allow_null=True,
        help_text="The expert rating (tutorial, probation) or the consensus before this rating (game); "
        "null for the first rater of a pair.",
    )
    explanation = serializers.CharField(allow_blank=True)
    first_rater = serializers.BooleanField()
    stage_total = serializers.IntegerField()
    stage_max = serializers.IntegerField(allow_null=True)
    window = WindowSerializer(allow_null=True)
    transition = serializers.CharField(
        allow_null=True,
        help_text="What this rating ended: tutorial_passed, tutorial_failed, probation_passed, probation_failed, "
        "window_passed, window_failed (back to probation), drift (agreement with the experts on the quality-check "
        "pairs fell too low: back to probation); null for none.",
    )
    level = serializers.IntegerField()
    rating_id = serializers.IntegerField()
    attention_check = serializers.BooleanField(
        help_text="true: the pair was a study's attention check (its caption said which level to choose, "
        "now in reference); it scores no points and counts toward nothing."
    )


class SubmitAnswerSerializer(FeedbackSerializer):
    """The answer of a submission: its feedback, and whether the submission was taken."""

    already_rated = serializers.BooleanField(
        help_text="true: this assignment was rated already (a repeated submission, from a double click or "
        "another tab or script) and the value sent now was not taken; the answer is the stored rating's "
        "feedback (its value is the one stored). false: the value sent is stored."
    )
    session_ended = serializers.BooleanField(
        help_text="true: this rating ended the participant's study session (its quota reached, or the probation "
        "rounds failed): nothing is served after it, and GET /api/study/session has the code."
    )


class SubmittedSerializer(SubmitAnswerSerializer):
    """The answer of a submission: its feedback, and the next pair when the submission asked for it."""

    next = ServedSerializer(
        allow_null=True,
        required=False,
        help_text='Only when the submission asked for it ("next": true): the pair to rate next, '
        "served now (as POST next serves it); null when nothing is left to rate right now.",
    )


class TutorialProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    score = serializers.IntegerField()
    max_score = serializers.IntegerField()
    pass_mark = serializers.IntegerField()


class ProbationProgressSerializer(TutorialProgressSerializer):
    round = serializers.IntegerField()


class GameProgressSerializer(serializers.Serializer):
    score = serializers.IntegerField()
    level = serializers.IntegerField()
    next_level_at = serializers.IntegerField(allow_null=True)
    ratings = serializers.IntegerField()
    exact_agreement = serializers.FloatField(allow_null=True)
    streak = serializers.IntegerField()
    window = WindowSerializer()


class StepSerializer(serializers.Serializer):
    """Where the rater is; the progress of that step (the others are null)."""

    step = serializers.ChoiceField(choices=Step.choices)
    tutorial = TutorialProgressSerializer(allow_null=True)
    probation = ProbationProgressSerializer(allow_null=True)
    game = GameProgressSerializer(allow_null=True)


def step_data(user) -> dict:
    step = progress.current_step(user)
    data = {"step": step.value, "tutorial": None, "probation": None, "game": None}
    if step == Step.GAME:
        window = progress.stage_progress(user, step).window
        data["game"] = {**services.personal_stats(user), "window": window}
    elif step in PLAYING_STEPS:
        data[step.value] = progress.stage_progress(user, step)
    return data


# --- Requests ---------------------------------------------------------------------------------


class ConsentSerializer(serializers.Serializer):
    agree = serializers.BooleanField(
        help_text="true: I agree that my ratings are stored and published as part of a research dataset."
    )

    def validate_agree(self, value: bool) -> bool:
        if value is not True:
            raise serializers.ValidationError("Agree to the consent form (agree: true) before you start.")
        return value


class SkipSerializer(serializers.Serializer):
    assignment_id = serializers.IntegerField(help_text="The open game pair to pass without rating it.")


class SkippedSerializer(serializers.Serializer):
    """A skipped pair, and the pair to rate next (null when nothing is left right now)."""

    skipped = serializers.IntegerField(help_text="The assignment skipped.")
    skips_left = serializers.IntegerField(help_text="Skips the rater may still make now.")
    next = ServedSerializer(allow_null=True)


class SubmitSerializer(serializers.Serializer):
    """Only these fields are read; the value is checked by the game (a whole number 1..5)."""

    assignment_id = serializers.IntegerField()
    value = serializers.IntegerField(min_value=1, max_value=5)
    next = serializers.BooleanField(
        required=False, default=False, help_text="true: answer the next pair to rate as well (one request per rating)."
    )


# --- Views ------------------------------------------------------------------------------------


class GameView(APIView):
    permission_classes = [IsAnnotator]


class StepView(GameView):
    @extend_schema(tags=[TAG], responses={200: StepSerializer, 401: ErrorSerializer, 403: ErrorSerializer})
    def get(self, request: Request) -> Response:
        return Response(StepSerializer(step_data(request.user)).data)


class ConsentView(GameView):
    @extend_schema(
        tags=[TAG],
        request=ConsentSerializer,
        responses={200: StepSerializer, 400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        ConsentSerializer(data=request.data).is_valid(raise_exception=True)
        progress.consent_give(user=request.user)
        return Response(StepSerializer(step_data(request.user)).data)


class NextPairView(GameView):
    @extend_schema(
        tags=[TAG],
        request=None,
        responses={
            200: PolymorphicProxySerializer(
                component_name="NextPair",
                serializers=[ServedSerializer, NoneLeftSerializer],
                resource_type_field_name=None,
            ),
            401: ErrorSerializer,
            403: OpenApiResponse(
                ErrorSerializer,
                description="no_consent, suspended, not an annotator, or session_ended (a study session that has "
                "ended: GET /api/study/session has the code)",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        served = game.pair_serve(rater=request.user)
        if served is None:
            return Response({"code": "none_left", "message": "No pair is left for you to rate right now."})
        return Response(ServedSerializer(served).data)


class SubmitRatingView(GameView):
    def dispatch(self, request, *args, **kwargs):
        # The hot path first (plain code, ratinggame.api.submit_fast); DRF's handling below answers
        # whatever it does not take.
        answer = submit_fast.submit(request, self)
        return answer if answer is not None else super().dispatch(request, *args, **kwargs)

    @extend_schema(
        tags=[TAG],
        request=SubmitSerializer,
        responses={
            200: SubmittedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="invalid_value, too_early, expired, invalid (next)"),
            401: ErrorSerializer,
            403: OpenApiResponse(
                ErrorSerializer, description="not_yours, wrong_stage, suspended, no_consent, session_ended"
            ),
            404: ErrorSerializer,
        },
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        assignment_id = data.get("assignment_id")
        if isinstance(assignment_id, bool) or not isinstance(assignment_id, int):
            return error_response("invalid_value", "assignment_id must be a whole number.", 400)
        serve_next = data.get("next", False)
        if not isinstance(serve_next, bool):
            return error_response("invalid", "next must be true or false.", 400, {"next": ["Must be true or false."]})
        # The value goes to the game as sent: it alone decides what a rating is ("3.5", 3.0,
        # true and "" are refused there with invalid_value, whatever a JSON parser made of them).
        feedback = game.rating_submit(
            rater=request.user, assignment_id=assignment_id, value=data.get("value"), serve_next=serve_next
        )
        # "next" is in the answer only when asked for: a plain submission answers as it always did.
        return Response((SubmittedSerializer if serve_next else SubmitAnswerSerializer)(feedback).data)


class SkipView(GameView):
    @extend_schema(
        tags=[TAG],
        request=SkipSerializer,
        responses={
            200: SkippedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="invalid (assignment_id)"),
            401: ErrorSerializer,
            403: OpenApiResponse(
                ErrorSerializer, description="not_yours, wrong_stage, suspended, no_consent, session_ended"
            ),
            404: OpenApiResponse(ErrorSerializer, description="not_found: no such pair served to this rater"),
            409: OpenApiResponse(
                ErrorSerializer,
                description="expired: rated or skipped already; skip_limit: none in the first 20 game pairs, then "
                "at most one in ten",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        """Pass the open game pair without a reason (not a report: nothing reaches staff). The pair is not
        scored and never served to this rater again. The answer carries the next pair."""
        data = request.data if isinstance(request.data, dict) else {}
        assignment_id = data.get("assignment_id")
        if isinstance(assignment_id, bool) or not isinstance(assignment_id, int):
            return error_response("invalid", "assignment_id must be a whole number.", 400)
        skipped = game.pair_skip(rater=request.user, assignment_id=assignment_id)
        served = game.pair_serve(rater=request.user)
        return Response(
            SkippedSerializer({"skipped": skipped.assignment_id, "skips_left": skipped.skips_left, "next": served}).data
        )


class FeedbackView(GameView):
    @extend_schema(
        tags=[TAG],
        responses={200: FeedbackSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, assignment_id: int) -> Response:
        return Response(FeedbackSerializer(game.feedback_for(rater=request.user, assignment_id=assignment_id)).data)
