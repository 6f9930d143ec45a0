"""Users of each role and API clients for the API, authorization and security tests."""

import io
import zipfile

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotators.models import RaterProfile, RaterState
from annotators.roles import ADMIN, ANNOTATOR, RESEARCHER, ensure_roles
from tests.factories import UserFactory, png_bytes

PASSWORD = "correct horse battery staple"


def role_user(role: str | None, *, username: str | None = None, state: str = RaterState.TUTORIAL, consent=True):
    """A user in ``role`` (None: no role). Annotators get a rater profile; admins are staff too."""
    from django.utils import timezone

    fields = {"username": username} if username else {}
    user = UserFactory(is_staff=role == ADMIN, **fields)
    if role is not None:
        user.groups.add(ensure_roles()[role])
    if role == ANNOTATOR:
        RaterProfile.objects.create(
            user=user,
            state=state,
            consent_at=timezone.now() if consent else None,
            game_entered_at=timezone.now() if state == RaterState.GAME else None,
        )
    return user


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def annotator(**kwargs):
    return role_user(ANNOTATOR, **kwargs)


def researcher(**kwargs):
    return role_user(RESEARCHER, **kwargs)


def admin(**kwargs):
    return role_user(ADMIN, **kwargs)


def error_of(response) -> dict:
    """The error object of an error answer, after checking the body has exactly the one shape."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert isinstance(body["error"]["code"], str) and body["error"]["code"]
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def image_file(name: str, seed: int):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, png_bytes(seed), content_type="image/png")
