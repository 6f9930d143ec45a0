"""Accounts for scripts: sign up as a rater, exchange a username and password for a token.

Tokens are checked by ``ratinggame.api.authentication.TokenAuthentication``.

``POST auth/signup`` creates an annotator (``annotators.services.rater_signup``, the same as
the sign-up page) and answers a token; ``POST auth/token`` answers the token of an existing
account; ``DELETE auth/token`` revokes the caller's token (a new POST makes a new one). Send it as
``Authorization: Token <key>``. Both POSTs are rate-limited per address, and ``auth/token``
is behind the same log-in limiter as the log-in pages (ratinggame.login_throttle).
"""

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotators import services
from annotators.study.settings import study
from annotators.throttles import SignupRateThrottle
from ratinggame import login_throttle
from ratinggame.api.errors import ErrorSerializer, error_response
from ratinggame.api.throttles import LoginRateThrottle

TAG = "auth"


class SignupSerializer(serializers.Serializer):
    # The lengths and the rules of the user model's fields are checked by rater_signup, on the
    # normalised name (NFKC may make a name longer than it was typed).
    username = serializers.CharField(max_length=150, validators=[UnicodeUsernameValidator()])
    password = serializers.CharField(max_length=128, write_only=True, style={"input_type": "password"})
    email = serializers.EmailField(required=False, allow_blank=True, default="", max_length=254)


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=128, write_only=True, style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class AccountSerializer(TokenSerializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class SignupView(APIView):
    # No session: signing up never depends on (or rides) a logged-in browser session.
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [SignupRateThrottle]

    @extend_schema(
        tags=[TAG],
        request=SignupSerializer,
        responses={201: AccountSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 429: ErrorSerializer},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        serializer = SignupSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if refusal := study().newcomer_refusal(signup=True):
            return error_response(*refusal, status.HTTP_403_FORBIDDEN)
        try:
            user = services.rater_signup(username=data["username"], password=data["password"], email=data["email"])
        except ValidationError as error:
            raise serializers.ValidationError(error.message_dict) from None
        token, _ = Token.objects.get_or_create(user=user)
        body = AccountSerializer({"id": user.pk, "username": user.get_username(), "token": token.key}).data
        return Response(body, status=status.HTTP_201_CREATED)


class TokenView(APIView):
    """POST: anyone may ask, with a password (no session, limited per address); DELETE: the token's owner."""

    password_post = False

    def initialize_request(self, request, *args, **kwargs):
        # Authenticators are chosen while the request is wrapped, before self.request is set.
        self.password_post = request.method == "POST"
        return super().initialize_request(request, *args, **kwargs)

    def get_authenticators(self) -> list:
        return [] if self.password_post else super().get_authenticators()

    def get_permissions(self) -> list:
        return [AllowAny()] if self.request.method == "POST" else [IsAuthenticated()]

    def get_throttles(self) -> list:
        return [LoginRateThrottle()] if self.request.method == "POST" else super().get_throttles()

    @extend_schema(
        tags=[TAG],
        request=TokenRequestSerializer,
        responses={
            200: TokenSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Wrong username or password."),
            429: OpenApiResponse(ErrorSerializer, description="Too many attempts."),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        username = request.data.get("username") if isinstance(request.data, dict) else None
        address = login_throttle.client_address(request)
        if isinstance(username, str):
            seconds = login_throttle.seconds_blocked(username, address)
            if seconds:
                response = error_response(
                    "throttled", login_throttle.blocked_message(seconds), 429, {"retry_after_seconds": seconds}
                )
                response["Retry-After"] = str(seconds)
                return response
        # A failed authenticate() fires user_login_failed, which the limiter counts.
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        login_throttle.failures_clear(user.get_username(), address)
        token, _ = Token.objects.get_or_create(user=user)
        return Response(TokenSerializer({"token": token.key}).data)

    @extend_schema(tags=[TAG], request=None, responses={204: None, 401: ErrorSerializer})
    def delete(self, request: Request) -> Response:
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
