"""Serving the stored pair images, in development and in production alike.

Django's ``static()`` helper serves MEDIA_ROOT only with DEBUG on, and all of it (exports
included). This view serves only image files under MEDIA_ROOT/images/, whose names the site
chose itself (``images/<2 hex>/<sha256>.<ext>``, see ``ratinggame.models.image_upload_path``,
and the display copies ``images/<2 hex>/<sha256>-<size>.webp``) and that an Image row names:
the URL is matched against that pattern, so no part of a path a client sends reaches the file
system unchecked, exports (MEDIA_ROOT/exports/, permission-checked by the research views) are
never reachable here, and neither is a file whose row was never committed (an import that died
half-way; ``ratinggame.pairs.storage``).

Images are content-addressed, so a URL's content never changes: browsers may cache it for a
year. With RATINGGAME["MEDIA_ACCEL_REDIRECT"] set (e.g. "/protected-media/"), the view answers
with an ``X-Accel-Redirect`` header and nginx sends the file (docs/operators/deployment.md).
"""

import mimetypes
import re
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from ratinggame.models import Image

# images/ab/<64 hex>.<ext>, optionally with the 7-character suffix Django's storage added to a
# taken name before images were stored once per content (rows of that time still name them);
# display copies add "-<long side>" (images/ab/<64 hex>-480.webp, ratinggame.pairs.derivatives).
IMAGE_PATH = re.compile(
    r"images/[0-9a-f]{2}/(?P<sha256>[0-9a-f]{64})(?:_[A-Za-z0-9]{7})?(?:-[0-9]{1,4})?\.(?:jpg|png|webp|gif|bmp|img)"
)
CACHE_CONTROL = "public, max-age=31536000, immutable"


def _named_by_a_row(sha256: str, path: str) -> bool:
    """Whether the Image row of this content names ``path``: its file or one of its display copies."""
    image = Image.objects.filter(sha256=sha256).only("file", "derivatives").first()
    if image is None:
        return False
    return image.file.name == path or any(copy.get("name") == path for copy in image.derivatives or [])


@require_safe
def image_file(request: HttpRequest, path: str) -> HttpResponse:
    match = IMAGE_PATH.fullmatch(path)
    if match is None or not _named_by_a_row(match["sha256"], path):
        raise Http404("No such image.")
    root = (Path(settings.MEDIA_ROOT) / "images").resolve()
    target = (Path(settings.MEDIA_ROOT) / path).resolve()
    # The pattern already rules out '..' and separators; checked again in case MEDIA_ROOT/images
    # holds a symbolic link that points elsewhere.
    if root not in target.parents or not target.is_file():
        raise Http404("No such image.")
    content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    accel = settings.RATINGGAME.get("MEDIA_ACCEL_REDIRECT", "")
    if accel:
        response = HttpResponse(content_type=content_type)
        response["X-Accel-Redirect"] = accel.rstrip("/") + "/" + path
    else:
        response = FileResponse(target.open("rb"), content_type=content_type)
    response["Cache-Control"] = CACHE_CONTROL
    return response
