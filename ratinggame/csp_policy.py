"""The Content-Security-Policy header (django-csp), the site's own policy built once per process.

django-csp's middleware builds the header from the settings on every response (``build_policy``:
the directives copied, merged and joined, then again for the report-only header): 6% of a rating's
instructions through Django's handler, to write the same text each time. Only a view with a policy
of its own (django-csp's decorators: the API's Redoc page) or a page that asked for a nonce changes
it. ``SitePolicyMiddleware`` hands those responses to django-csp unchanged, and gives every other
response the header django-csp builds from the settings, built once (and again after a change of
settings, as tests make). What decides whether a response gets the header (exempt responses,
excluded prefixes, a header already set, Django's debug pages) is django-csp's rule, written out
here for the responses it serves itself: django-csp builds the policy inside that rule, so the
rule cannot be kept without building the policy.
"""

import functools
import http.client

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

# What a view's decorators set on its response (django-csp's ``get_policy_parts`` reads them).
_VIEW_POLICY = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")
_DEBUG_PAGES = (http.client.INTERNAL_SERVER_ERROR, http.client.NOT_FOUND)
# (header, the setting it comes from, the response attribute that exempts a response from it)
_HEADERS = (
    (HEADER, "CONTENT_SECURITY_POLICY", "_csp_exempt", False),
    (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", "_csp_exempt_ro", True),
)


@functools.cache
def site_policies() -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """(header, its text, the exempting attribute, the excluded path prefixes) of each header the
    settings define: django-csp's ``build_policy`` of the settings alone."""
    found = []
    for header, setting, exempt, report_only in _HEADERS:
        text = build_policy(report_only=report_only)
        if text:
            prefixes = tuple((getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ())
            found.append((header, text, exempt, prefixes))
    return tuple(found)


@receiver(setting_changed)
def _settings_changed(*, setting, **kwargs) -> None:
    if setting in ("CONTENT_SECURITY_POLICY", "CONTENT_SECURITY_POLICY_REPORT_ONLY"):
        site_policies.cache_clear()


class SitePolicyMiddleware(CSPMiddleware):
    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(
            getattr(response, name, None) is not None for name in _VIEW_POLICY
        ):
            return super().process_response(request, response)
        if response.status_code in _DEBUG_PAGES and settings.DEBUG:
            return response
        for header, text, exempt, prefixes in site_policies():
            excluded = prefixes and request.path_info.startswith(prefixes)
            # django-csp's own test: exempt unless the attribute is False itself (absent, False).
            if header not in response and getattr(response, exempt, False) is False and not excluded:
                response[header] = text
        # As django-csp: a nonce asked for after the header is written is an error, not a policy.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response
