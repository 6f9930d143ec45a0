"""The image storage's URLs (``ratinggame.pairs.storage.ContentAddressedStorage.url``): joined to the
base URL without urljoin's parse, and the same URL as Django's FileSystemStorage gives, whatever
the name (dot segments, characters to quote, a leading slash) and the base URL."""

from django.core.files.storage import FileSystemStorage
from hypothesis import given, settings
from hypothesis import strategies as st

from ratinggame.pairs.storage import ContentAddressedStorage

SEGMENT = st.one_of(
    st.sampled_from([".", "..", "", "images", "ab", "d4e5f6.png", "a b", "x?y#z", "c:d", "ü.jpg", "%41", "s;t"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="/\\\x00"), max_size=8),
)
NAMES = st.lists(SEGMENT, min_size=1, max_size=5).map("/".join)
PLAIN_BASES = ["/media/", "https://images.example.org/m/", "/", "//cdn.example.org/media/", "media/"]
RESOLVED_BASES = ["/media/?v=1/", "/media/#top/", "http://h/a/../", "/m/./", "/media"]  # urljoin changes these
BASES = st.sampled_from([*PLAIN_BASES, *RESOLVED_BASES])


@settings(max_examples=500)
@given(name=NAMES, base=BASES)
def test_every_name_has_the_url_django_gives_it(name, base):
    ours = ContentAddressedStorage(location="/tmp/unused", base_url=base)
    django = FileSystemStorage(location="/tmp/unused", base_url=base)
    assert ours.url(name) == django.url(name)


def test_an_image_name_is_joined_to_the_base_url():
    storage = ContentAddressedStorage(location="/tmp/unused", base_url="/media/")
    assert storage.url("images/ab/abcdef.png") == "/media/images/ab/abcdef.png"
    assert storage.url(None) == FileSystemStorage(location="/tmp/unused", base_url="/media/").url(None)
