"""Reading external rating sets (scoring/rating_files.py)."""

import pytest

from scoring.rating_files import RatingFileError, read_ratings_file
from tests.shared_data import VICR_SAMPLE


def write(tmp_path, text, name="ratings.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


# --- the real VICR sample -----------------------------------------------------------------


@pytest.fixture
def vicr_sample():
    if not VICR_SAMPLE.exists():
        pytest.skip(f"{VICR_SAMPLE} is not on this machine")
    return VICR_SAMPLE


def test_vicr_sample_wide(vicr_sample):
    # The file starts with a UTF-8 byte-order mark and holds 249 pairs with 3..7 ratings each.
    assert vicr_sample.read_bytes()[:3] == b"\xef\xbb\xbf"
    ratings = read_ratings_file(vicr_sample, format="wide")
    assert len(ratings) == 249
    assert all(3 <= len(values) <= 7 for values in ratings.values())
    assert all(1 <= value <= 5 for values in ratings.values() for value in values)
    # First data row: ...COCO_val2014_000000000192.jpg, "a baseball player throwing a pitch from
    # the mound", num_ratings 4, ratings 4,3,4,3.
    first_id, first = next(iter(ratings.items()))
    image = "http://images.cocodataset.org/val2014/COCO_val2014_000000000192.jpg"
    assert first_id == image + "\t" + "a baseball player throwing a pitch from the mound"
    assert first == [4, 3, 4, 3]


def test_vicr_sample_counts_match_its_num_ratings_column(vicr_sample):
    import csv

    with open(vicr_sample, encoding="utf-8-sig", newline="") as handle:
        declared = [int(row["num_ratings"]) for row in csv.DictReader(handle)]
    ratings = read_ratings_file(vicr_sample, format="wide")
    assert [len(values) for values in ratings.values()] == declared
    assert sum(declared) == sum(len(values) for values in ratings.values())


# --- long format --------------------------------------------------------------------------


def test_long_format_groups_ratings_by_pair_in_file_order(tmp_path):
    path = write(tmp_path, "pair_id,rating,rater_id\np1,4,a\np2,1,a\np1,5,b\np1,4,c\n")
    assert read_ratings_file(path) == {"p1": [4, 5, 4], "p2": [1]}


def test_long_format_without_rater_and_with_extra_columns(tmp_path):
    path = write(tmp_path, "\ufeffnote,Rating,pair_id\nx, 3 ,7\ny,2.0,7\n")
    assert read_ratings_file(path, format="long") == {"7": [3, 2]}


def test_long_format_same_rater_twice_on_a_pair(tmp_path):
    path = write(tmp_path, "pair_id,rating,rater_id\np1,4,a\np1,5,a\n")
    with pytest.raises(RatingFileError, match="row 3"):
        read_ratings_file(path)


# --- wide format --------------------------------------------------------------------------


def test_wide_format_pair_id_column_and_empty_cells(tmp_path):
    path = write(tmp_path, "id,rating_1,rating_2,rating_3\na,1,2,\nb,,5,5\n")
    assert read_ratings_file(path, format="wide") == {"a": [1, 2], "b": [5, 5]}


def test_wide_format_falls_back_to_row_numbers(tmp_path):
    path = write(tmp_path, "rating,rating_2,rating_3\n1,2,3\n\n4,4,4\n")
    # Row 1 is the header; the blank line is row 3.
    assert read_ratings_file(path, format="wide") == {"2": [1, 2, 3], "4": [4, 4, 4]}


# --- malformed files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("pair_id,rater_id\np1,a\n", "long", r"row 1: missing column\(s\) rating"),
        ("rating,rater_id\n4,a\n", "long", r"row 1: missing column\(s\) pair_id"),
        ("image,caption\nu,c\n", "wide", r"row 1: no rating columns"),
        ("pair_id,rating\np1,4\np1,x\n", "long", r"row 3: rating = 'x' is not a whole number"),
        ("pair_id,rating\np1,3.5\n", "long", r"row 2: rating = '3.5' is not a whole number"),
        ("pair_id,rating\np1,6\n", "long", r"row 2: rating = '6' is out of range 1-5"),
        ("pair_id,rating\np1,0\n", "long", r"row 2: rating = '0' is out of range 1-5"),
        ("pair_id,rating\n,4\n", "long", r"row 2: empty pair_id"),
        ("pair_id,rating\np1\n", "long", r"row 2: no value for column 'rating'"),
        ("id,ratings,rating_2\na,1,2\nb,3,3\na,4,4\n", "wide", r"row 4: pair 'a' is already on row 2"),
        ("image,caption,ratings,rating_2\nu,c,1,2\nu,c,3,3\n", "wide", r"row 3: pair .* is already on row 2"),
        ("id,ratings,rating_2\na,1,-2\n", "wide", r"row 2: rating_2 = '-2' is out of range"),
        ("id,num_ratings,ratings,rating_2\na,3,1,2\n", "wide", r"row 2: num_ratings is '3' but 2 ratings"),
        ("", "long", r"row 1: the file is empty"),
    ],
)
def test_malformed_files_name_the_row_and_the_reason(tmp_path, text, fmt, message):
    with pytest.raises(RatingFileError, match=message):
        read_ratings_file(write(tmp_path, text), format=fmt)


def test_bad_encoding_names_the_line(tmp_path):
    path = write(tmp_path, b"pair_id,rating\np1,4\n" + "p2é,3\n".encode("latin-1"))
    with pytest.raises(RatingFileError, match=r"line 3: not UTF-8"):
        read_ratings_file(path)


@pytest.mark.parametrize("text", ['pair_id,rating\np1,"4\n', 'pair_id,rating\np1,"4"4\n'])
def test_broken_quotes_are_a_malformed_csv(tmp_path, text):
    with pytest.raises(RatingFileError, match=r"row 2: malformed CSV"):
        read_ratings_file(write(tmp_path, text))


def test_rating_file_error_is_a_value_error_and_format_is_checked(tmp_path):
    assert issubclass(RatingFileError, ValueError)
    with pytest.raises(ValueError, match="format"):
        read_ratings_file(write(tmp_path, "pair_id,rating\n"), format="json")
