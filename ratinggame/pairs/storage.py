"""Where image files live: one name per content, written whole or not at all.

An image's name is its sha256 (``ratinggame.models.image_upload_path``), so a name that exists
already holds the same bytes, and storing the content again must land on that name: Django's
FileSystemStorage would add a random suffix instead (``<sha256>_KnY2ofM.png``), a copy per
attempt. Each file is written to a temporary name in its folder and renamed into place
(``os.replace``, atomic on one file system), so a process killed while writing leaves no
partial file under a real name, only a ``.incoming-*`` file.

A file stored for a row that was never committed (an import killed or rolled back) is an
orphan: nothing serves it (``ratinggame.pairs.media`` serves only files an Image row names)
and ``ratinggame.pairs.services.media_orphans_delete`` removes it once it is old enough that
no import still running can be about to commit its row.
"""

import functools
import os
import tempfile
from urllib.parse import urljoin

from django.core.files.storage import FileSystemStorage
from django.utils.encoding import filepath_to_uri

INCOMING_PREFIX = ".incoming-"
FILE_MODE = 0o644
_NOT_PLAIN = ("", ".", "..")  # path segments that urljoin resolves or drops


class ContentAddressedStorage(FileSystemStorage):
    def get_available_name(self, name: str, max_length: int | None = None) -> str:
        # The name is the content: an existing file with it holds the same bytes.
        return name

    def _save(self, name: str, content) -> str:
        full_path = self.path(name)
        directory = os.path.dirname(full_path)
        os.makedirs(directory, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=INCOMING_PREFIX)
        try:
            with os.fdopen(handle, "wb") as out:
                for chunk in content.chunks():
                    out.write(chunk)
            os.chmod(temporary, self.file_permissions_mode or FILE_MODE)
            # Replacing an existing file writes the same bytes and refreshes its time, which
            # keeps the orphan sweep away from a file an import is about to use again.
            os.replace(temporary, full_path)
        except BaseException:
            os.unlink(temporary)
            raise
        return name

    def url(self, name: str) -> str:
        # Every served pair asks for its image's URL (and the rating page for each display copy's):
        # FileSystemStorage joins the name to the base URL with urljoin, which parses both each
        # time. A name of plain segments (this storage's: digests in folders; none empty, none "."
        # or "..", which urljoin resolves or drops) joins a plain base URL (one that urljoin
        # extends as it is) by concatenation; anything else goes the general way.
        base = self.base_url
        if not name or base is None or not _joins_as_it_is(base):
            return super().url(name)
        path = filepath_to_uri(name).lstrip("/")
        if any(segment in _NOT_PLAIN for segment in path.split("/")):
            return super().url(name)
        return base + path


@functools.lru_cache(maxsize=16)
def _joins_as_it_is(base: str) -> bool:
    """Whether urljoin extends ``base`` with a relative path by appending it (a base ending in "/",
    without a query, a fragment or a dot segment of its own)."""
    return urljoin(base, "a/b") == base + "a/b"


@functools.cache
def image_storage() -> ContentAddressedStorage:
    """The storage of ``Image.file`` (a callable, so that migrations name it, not its settings).

    One per process: every served pair asks it for its image's URL, and a new storage per call
    would register a settings listener per call (its locations follow MEDIA_ROOT and MEDIA_URL
    through that listener, so one instance stays right when they change)."""
    return ContentAddressedStorage()
