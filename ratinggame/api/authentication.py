"""How API requests authenticate (REST_FRAMEWORK's DEFAULT_AUTHENTICATION_CLASSES).

Its own module, importing no view: DRF reads the setting while it defines its views.
"""

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from annotators import roles


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``: DRF's, with the token, its user and the user's roles read by
    one query. Nothing is cached: a revoked token or a changed role counts from the next request
    on, in every web process."""

    def authenticate_credentials(self, key: str) -> tuple:
        token = Token.objects.select_related("user").annotate(**roles.role_annotations("user")).filter(key=key).first()
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        roles.role_names_keep(token.user, token)
        return token.user, token
