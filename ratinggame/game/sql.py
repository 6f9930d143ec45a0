"""The game's hottest reads and writes as SQL, built once per process from the models' names.

A rating and the next serve are the product's unit of work: each statement of that path is
written here once, its table and column names taken from the models (the models stay the
schema's one home), and kept per database vendor for the life of the process. Values go out
as their model fields prepare them (``Field.get_db_prep_save``; a value its field would not
change, a whole number for an integer column, goes as it is: ``prepared``) and come back through
the fields' own database converters (``RowShape.read``, for the columns that have any), so a
timestamp is aware and a JSON column a list, exactly as a queryset would give them, without
building queries or model instances on the way. They run on the game's cursor
(``ratinggame.game.cursor``).

``STATEMENTS`` lists every statement with the model fields it names: a test checks each name
against the models, and runs each statement, so a migration cannot leave one behind.

Nothing of the game's rules is here: which pair, how many points, what a window decides are
Python (``ratinggame.game.rating``, ``annotators.journey``, ``scoring.consensus``); these
statements only read and write what those decided, under the locks they rely on.
"""

import dataclasses
import functools
from collections.abc import Callable
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models import Model
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_aware, make_aware
from rest_framework.authtoken.models import Token

from annotators.models import Participation, RaterProfile
from ratinggame.game.cursor import fetch_all, fetch_one
from ratinggame.models import SERVED_IN_GAME, Assignment, CaptionPair, Image, Pool, Rating, Session

GAME = Pool.GAME.value
CONTROL = Pool.CONTROL.value
SERVED_IN_GAME_SQL = ", ".join(f"'{stage.value}'" for stage in SERVED_IN_GAME)


def _db():
    """This thread's database connection itself: ``django.db.connection`` is a proxy that looks it
    up on every attribute read (and ``connections[...]`` looks it up in a thread-local store: once
    per statement, not per value)."""
    return connections[DEFAULT_DB_ALIAS]


@functools.cache
def _vendor() -> str:
    """The database's vendor: one database for the life of the process."""
    return _db().vendor


# --- Rows: what the game reads of each table --------------------------------------------------------


@dataclasses.dataclass
class ProfileRow:
    """A rater's profile as the game reads and writes it (``annotators.models.RaterProfile``)."""

    id: int
    user_id: int
    state: str
    consent_at: datetime | None
    game_score: int
    game_entered_at: datetime | None
    created_at: datetime
    window_count: int
    window_points: int
    game_serves: int
    control_owed_at: int | None
    controls_owed: int
    game_skips: int
    order_seed: int
    label_precision: float | None
    label_severity: float | None
    label_lapse: float | None
    recent_images: list
    # Not a column of the profile's table: read beside it by every statement that locks the
    # profile for a serve or a rating (``_participant``, read by ``profile_with_participant``), so
    # the study's session gate (SPEC 7) costs a rater who did not come through a platform link
    # nothing.
    participant: bool = dataclasses.field(default=False, init=False)


@dataclasses.dataclass
class PairRow:
    """A caption pair's fields the game reads and writes (``ratinggame.models.CaptionPair``)."""

    id: int
    image_id: int
    caption: str
    pool: str
    expert_rating: int | None
    human_count: int
    human_sum: int
    human_sumsq: int
    primes: list
    in_flight: int
    assign_rank: int | None
    withdrawn_at: datetime | None
    label_evidence: list


@dataclasses.dataclass
class ImageRow:
    """What a page shows of an image (``ratinggame.models.Image``): its storage name and copies."""

    id: int
    file: str
    width: int
    height: int
    derivatives: list

    @property
    def pk(self) -> int:
        return self.id


@dataclasses.dataclass
class AssignmentRow:
    id: int
    rater_id: int
    pair_id: int
    stage: str
    served_at: datetime
    expires_at: datetime
    submitted_at: datetime | None
    skipped_at: datetime | None
    holds_slot: bool
    # Not a column of the assignment's table: its rater's latest counted control ratings since
    # they entered the game, as many as the drift rule reads, in ``_rater_controls``'s text (read
    # by ``rater_controls_read`` only after a control's rating); read beside the assignment by
    # ``assignment_with_pair`` and ``assignment_locking_pair`` only (None elsewhere, or none).
    rater_controls: str | None = dataclasses.field(default=None, init=False)


@dataclasses.dataclass
class RatingRow:
    """A stored rating, as its feedback is shown again (a repeated submission)."""

    id: int
    value: int
    points: int
    reference: int | None
    feedback: dict
    stage: str


class RowShape:
    """The columns of a row dataclass in one model's table, and the reading of their values.

    Each dataclass field names a model field (its ``attname``: ``user_id`` for a foreign key);
    values are converted by the model field's database converters, as the ORM converts them.
    """

    def __init__(self, row_type: type, model: type[Model]) -> None:
        self.row_type = row_type
        self.model = model
        columns = [field for field in dataclasses.fields(row_type) if field.init]
        self.fields = [model._meta.get_field(field.name) for field in columns]
        self.width = len(self.fields)
        self._converters: dict[str, list] = {}

    def select(self, alias: str) -> str:
        return ", ".join(f'{alias}."{field.column}"' for field in self.fields)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(field.name for field in self.fields)

    def _converters_now(self) -> list:
        """(column index, converters, expression, connection) of the columns whose values the
        database gives otherwise than the model's field holds them (a JSON column's text, SQLite's
        timestamps): built once per process; the other columns' values are the fields' own."""
        found = self._converters.get(_vendor())
        if found is None:
            db = _db()
            found = []
            for index, field in enumerate(self.fields):
                expression = field.get_col(self.model._meta.db_table)
                chain = db.ops.get_db_converters(expression) + field.get_db_converters(db)
                if chain:
                    found.append((index, chain, expression, db))
            self._converters[_vendor()] = found
        return found

    def of(self, instance: Model) -> object:
        """The row of a model instance (a path that read it through the ORM)."""
        values = [getattr(instance, field.attname) for field in self.fields]
        # A file field's value is its storage name, as the database holds it.
        return self.row_type(*(value.name if hasattr(value, "storage") else value for value in values))

    def read(self, values) -> object:
        converters = self._converters_now()
        if converters:
            values = list(values)
            for index, chain, expression, db in converters:
                value = values[index]
                for converter in chain:
                    value = converter(value, expression, db)
                values[index] = value
        return self.row_type(*values)


PROFILE = RowShape(ProfileRow, RaterProfile)
PAIR = RowShape(PairRow, CaptionPair)
IMAGE = RowShape(ImageRow, Image)
ASSIGNMENT = RowShape(AssignmentRow, Assignment)
RATING = RowShape(RatingRow, Rating)


def table(model: type[Model]) -> str:
    return f'"{model._meta.db_table}"'


def column(model: type[Model], name: str) -> str:
    return f'"{model._meta.get_field(name).column}"'


# --- Parameters -----------------------------------------------------------------------------------

# Fields whose database value is the Python value itself when it has the type named: their
# ``get_db_prep_save`` is then ``bool(value)``, ``int(value)`` or ``str(value)`` (a foreign key's
# is its target's), and on PostgreSQL an aware timestamp's is the timestamp (the driver adapts it).
# Such a value goes out as it is; any other value (a naive timestamp, a string for a number), and
# every value of another field (a JSON column), is prepared by its field, as ``save`` prepares it.
_PLAIN = ((models.BooleanField, bool), (models.IntegerField, int), (models.CharField, str), (models.TextField, str))


def plain_type(field: models.Field | None, vendor: str) -> type | None:
    """The type whose values ``field`` stores as they are on ``vendor`` (None: every value is prepared)."""
    if isinstance(field, models.ForeignKey):
        field = field.target_field
    if vendor == "postgresql" and isinstance(field, models.DateTimeField):
        return datetime
    return next((kind for base, kind in _PLAIN if isinstance(field, base)), None)


def preparers(fields, vendor: str) -> tuple:
    """(field, plain type) of each parameter's field, for ``prepared``."""
    return tuple((field, plain_type(field, vendor)) for field in fields)


def prepared(preparers_: tuple, values, db) -> list:
    """The parameters as the database takes them: each value prepared by its field (a field of
    None: passed as is), a plain value of a plain field as it is."""
    return [
        value if field is None or _plain(value, kind) else field.get_db_prep_save(value, db)
        for (field, kind), value in zip(preparers_, values, strict=True)
    ]


def _plain(value, kind: type | None) -> bool:
    if kind is None:
        return False
    if value is None:
        return True
    return type(value) is kind and (kind is not datetime or value.tzinfo is not None)


# --- Statements -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Statement:
    """One statement: its SQL for this process's database, and the model fields it names."""

    sql: str
    names: dict  # model -> field names the SQL uses (checked against the models by a test)
    param_fields: tuple = ()  # the model field each parameter is prepared by (None: passed as is)

    def __post_init__(self) -> None:
        # A statement does not know its database: its timestamps go through their field (the
        # writes, which know it, send an aware timestamp as it is on PostgreSQL).
        object.__setattr__(self, "_preparers", preparers(self.param_fields, ""))

    def params(self, values, db) -> list:
        if not self.param_fields:
            return list(values)
        return prepared(self._preparers, values, db)

    def fetchone(self, *values):
        db = _db()
        return fetch_one(db, self.sql, self.params(values, db))

    def fetchall(self, *values) -> list:
        db = _db()
        return fetch_all(db, self.sql, self.params(values, db))


STATEMENTS: dict[str, Callable[[str], Statement]] = {}


def statement(builder: Callable[[str], Statement]) -> Callable[[], Statement]:
    """A statement built once per database vendor: ``name()`` gives the one for this connection."""
    cached = functools.cache(builder)
    STATEMENTS[builder.__name__] = cached

    def current() -> Statement:
        return cached(_vendor())

    current.__name__ = builder.__name__
    current.__doc__ = builder.__doc__
    return current


def row_lock(vendor: str, of: str) -> str:
    """Every row lock of the project is FOR NO KEY UPDATE (``select_for_update(no_key=True)`` in
    the ORM): it excludes every other writer of the row, but not the FOR KEY SHARE lock that a
    foreign key's check takes at another transaction's commit. With FOR UPDATE, a rater whose
    rating of a control pair holds that pair while its drift rule waits for a game pair would
    deadlock with the rater rating that game pair, whose new assignment to the same control pair
    waits at commit for the key-share lock (PostgreSQL breaks it after deadlock_timeout)."""
    return f" FOR NO KEY UPDATE OF {of}" if vendor == "postgresql" else ""


def _group_names(vendor: str, user: str) -> str:
    """The user's group names as one comma-separated text (their roles), a subquery."""
    membership = get_user_model()._meta.get_field("groups").remote_field.through
    aggregate = "string_agg" if vendor == "postgresql" else "group_concat"
    names = f"{aggregate}(g.{column(Group, 'name')}, ',')"
    return (
        f'(SELECT {names} FROM {table(membership)} ug JOIN {table(Group)} g ON g."id" = ug."group_id" '  # noqa: S608
        f'WHERE ug."user_id" = {user}."id")'
    )


USER_FIELDS = ("id", "password", "is_active", "is_staff", "is_superuser")


def _user_columns(alias: str) -> str:
    user_model = get_user_model()
    return ", ".join(f"{alias}.{column(user_model, name)}" for name in USER_FIELDS)


@statement
def rater_by_token(vendor: str) -> Statement:
    """The token's user, their roles and their rater profile, locked: who rates, in one query."""
    user_model = get_user_model()
    sql = (
        f"SELECT {_user_columns('u')}, {_group_names(vendor, 'u')}, {PROFILE.select('p')}, {_participant('p')} "  # noqa: S608
        f'FROM {table(Token)} t JOIN {table(user_model)} u ON u."id" = t.{column(Token, "user")} '
        f'JOIN {table(RaterProfile)} p ON p.{column(RaterProfile, "user")} = u."id" '
        f"WHERE t.{column(Token, 'key')} = %s{row_lock(vendor, 'p')}"
    )
    names = {
        Token: ("user", "key"),
        user_model: USER_FIELDS,
        Group: ("name",),
        RaterProfile: PROFILE.names,
        Participation: ("profile",),
    }
    return Statement(sql, names)


@statement
def rater_by_session(vendor: str) -> Statement:
    """The session's data and user, their roles and their rater profile, locked, in one query
    (the session table names its user: ``ratinggame.models.Session``)."""
    user_model = get_user_model()
    sql = (
        f"SELECT s.{column(Session, 'session_data')}, {_user_columns('u')}, {_group_names(vendor, 'u')}, "  # noqa: S608
        f"{PROFILE.select('p')}, {_participant('p')} FROM {table(Session)} s "
        f'JOIN {table(user_model)} u ON u."id" = s.{column(Session, "user")} '
        f'JOIN {table(RaterProfile)} p ON p.{column(RaterProfile, "user")} = u."id" '
        f"WHERE s.{column(Session, 'session_key')} = %s AND s.{column(Session, 'expire_date')} > %s"
        f"{row_lock(vendor, 'p')}"
    )
    names = {
        Session: ("session_data", "user", "session_key", "expire_date"),
        user_model: USER_FIELDS,
        Group: ("name",),
        RaterProfile: PROFILE.names,
        Participation: ("profile",),
    }
    return Statement(sql, names, (None, Session._meta.get_field("expire_date")))


@statement
def profile_locked(vendor: str) -> Statement:
    sql = (
        f"SELECT {PROFILE.select('p')}, {_participant('p')} FROM {table(RaterProfile)} p "  # noqa: S608
        f"WHERE p.{column(RaterProfile, 'user')} = %s"
    )
    return Statement(sql + row_lock(vendor, "p"), {RaterProfile: PROFILE.names, Participation: ("profile",)})


def _participant(alias: str) -> str:
    """Whether the rater of the profile ``alias`` came through a study's platform link (a
    ``Participation``: their session may end, SPEC 7), as the column after the profile's."""
    return (
        f"EXISTS (SELECT 1 FROM {table(Participation)} pa "  # noqa: S608
        f'WHERE pa.{column(Participation, "profile")} = {alias}."id")'
    )


def profile_with_participant(values) -> ProfileRow:
    """The profile row of a statement's profile columns followed by ``_participant``'s."""
    profile = PROFILE.read(values[: PROFILE.width])
    profile.participant = bool(values[PROFILE.width])
    return profile


def _assignment_with_pair(vendor: str, lock: bool) -> Statement:
    sql = (
        f"SELECT {ASSIGNMENT.select('a')}, {PAIR.select('q')}, {RATING.select('r')}, "  # noqa: S608
        f"{_rater_controls(vendor, 'a')} "
        f'FROM {table(Assignment)} a JOIN {table(CaptionPair)} q ON q."id" = a.{column(Assignment, "pair")} '
        f'LEFT JOIN {table(Rating)} r ON r.{column(Rating, "assignment")} = a."id" '
        f'WHERE a."id" = %s' + (row_lock(vendor, "q") if lock else "")
    )
    names = {
        Assignment: (*ASSIGNMENT.names, "pair", "rater"),
        CaptionPair: PAIR.names,
        Rating: (*RATING.names, "assignment", "rater", "stage", "excluded", "submitted_at", "value", "reference"),
        RaterProfile: ("user", "game_entered_at", "created_at"),
    }
    return Statement(sql, names, (Rating._meta.get_field("excluded"), None, None))


@statement
def assignment_locking_pair(vendor: str) -> Statement:
    """An assignment with its pair, row-locked, its rating if it has one, and its rater's latest
    control ratings; parameters: False (not excluded), how many controls, the assignment's id."""
    return _assignment_with_pair(vendor, lock=True)


@statement
def assignment_with_pair(vendor: str) -> Statement:
    """The same, without the lock (the pair is locked with others, in id order, or has no consensus)."""
    return _assignment_with_pair(vendor, lock=False)


def _rater_controls(vendor: str, assignment: str) -> str:
    """The latest counted control ratings (newest first, at most a number of them) of the rater of
    the assignment ``assignment``, since their entry to the game (or their sign-up), as one text:
    ``submitted_at|value|reference`` joined by ``;`` (``rater_controls_read``).

    The read of every rating's assignment carries it, whatever the pair's pool: a control's rating
    then costs what a game pair's does, with nothing (time included) to tell a rater which pair
    was the quality check (SPEC 2.5). The drift rule reads the oldest of them by its time: the
    text's order is not relied on."""
    r = {name: column(Rating, name) for name in ("rater", "stage", "excluded", "submitted_at", "value", "reference")}
    p = {name: column(RaterProfile, name) for name in ("user", "game_entered_at", "created_at")}
    aggregate = "string_agg" if vendor == "postgresql" else "group_concat"
    entry = "CAST(x.t AS text) || '|' || CAST(x.v AS text) || '|' || CAST(x.e AS text)"
    return (
        f"(SELECT {aggregate}({entry}, ';') FROM ("  # noqa: S608
        f"SELECT c.{r['submitted_at']} t, c.{r['value']} v, c.{r['reference']} e FROM {table(Rating)} c "
        f"JOIN {table(RaterProfile)} cp ON cp.{p['user']} = {assignment}.{column(Assignment, 'rater')} "
        f"WHERE c.{r['rater']} = {assignment}.{column(Assignment, 'rater')} AND c.{r['stage']} = '{CONTROL}' "
        f"AND c.{r['excluded']} = %s AND c.{r['submitted_at']} >= COALESCE(cp.{p['game_entered_at']}, "
        f'cp.{p["created_at"]}) ORDER BY c.{r["submitted_at"]} DESC, c."id" DESC LIMIT %s) x)'
    )


def rater_controls_read(text: str | None) -> list[tuple[datetime, int, int]]:
    """``_rater_controls``'s text as (submitted_at, value, reference), newest first: the times as
    the database wrote them (PostgreSQL's with their offset, SQLite's naive in UTC), made aware."""
    found = []
    for entry in text.split(";") if text else ():
        at, value, reference = entry.split("|")
        moment = parse_datetime(at)
        found.append((moment if is_aware(moment) else make_aware(moment, UTC), int(value), int(reference)))
    return sorted(found, reverse=True)


@statement
def latest_game_assignment(vendor: str) -> Statement:
    """The rater's latest serve on the game screen (a control or an attention check too) with its
    pair and image: the one open, if any (a rater holds at most one). The images the next serve
    keeps away from are the profile's own (``recent_images``), not read here."""
    sql = (
        f"SELECT {ASSIGNMENT.select('a')}, {PAIR.select('q')}, {IMAGE.select('i')} "  # noqa: S608
        f'FROM {table(Assignment)} a JOIN {table(CaptionPair)} q ON q."id" = a.{column(Assignment, "pair")} '
        f'JOIN {table(Image)} i ON i."id" = q.{column(CaptionPair, "image")} '
        f"WHERE a.{column(Assignment, 'rater')} = %s AND a.{column(Assignment, 'stage')} IN ({SERVED_IN_GAME_SQL}) "
        f'ORDER BY a."id" DESC LIMIT 1'
    )
    names = {Assignment: (*ASSIGNMENT.names, "rater", "stage"), CaptionPair: PAIR.names, Image: IMAGE.names}
    return Statement(sql, names)


@statement
def control_candidates(vendor: str) -> Statement:
    """Every pair of a pool (the controls, or a study's attention checks) with its image, when this
    rater was last served it, and whether they skipped it."""
    a_rater, a_pair = column(Assignment, "rater"), column(Assignment, "pair")
    sql = (
        f"SELECT {PAIR.select('q')}, {IMAGE.select('i')}, "  # noqa: S608
        f"(SELECT max(s.{column(Assignment, 'served_at')}) FROM {table(Assignment)} s "
        f'WHERE s.{a_rater} = %s AND s.{a_pair} = q."id"), '
        f'EXISTS (SELECT 1 FROM {table(Assignment)} s WHERE s.{a_rater} = %s AND s.{a_pair} = q."id" '
        f"AND s.{column(Assignment, 'skipped_at')} IS NOT NULL) "
        f'FROM {table(CaptionPair)} q JOIN {table(Image)} i ON i."id" = q.{column(CaptionPair, "image")} '
        f"WHERE q.{column(CaptionPair, 'pool')} = %s AND q.{column(CaptionPair, 'expert_rating')} IS NOT NULL"
    )
    names = {
        CaptionPair: (*PAIR.names, "pool", "expert_rating"),
        Image: IMAGE.names,
        Assignment: ("rater", "pair", "served_at", "skipped_at"),
    }
    return Statement(sql, names, (None, None, None))


# --- Writes ---------------------------------------------------------------------------------------

# A write is one UPDATE or INSERT of the fields named, by primary key (updates) or with every
# field named (inserts). ``WritePlan`` sends a list of them as one statement of data-modifying
# CTEs on PostgreSQL (every part runs on the same snapshot, no two parts touch the same row), and
# one after the other elsewhere; each part answers the rows it updated, or the id it inserted.


@dataclasses.dataclass(frozen=True)
class Write:
    model: type[Model]
    fields: tuple[str, ...]  # updated or inserted fields, in parameter order
    insert: bool = False
    where: tuple[str, ...] = ("id",)  # updates: the fields that must equal the parameters after the set ones
    where_sql: str = ""  # updates: more conditions, as SQL on the table's columns (no parameters)

    def sql(self) -> str:
        names = [self.model._meta.get_field(name).column for name in self.fields]
        if self.insert:
            placeholders = ", ".join(["%s"] * len(names))
            columns = ", ".join(f'"{name}"' for name in names)
            return f'INSERT INTO {table(self.model)} ({columns}) VALUES ({placeholders}) RETURNING "id"'  # noqa: S608
        sets = ", ".join(f'"{name}" = %s' for name in names)
        where = " AND ".join(f"{column(self.model, name)} = %s" for name in self.where)
        extra = f" AND {self.where_sql}" if self.where_sql else ""
        return f"UPDATE {table(self.model)} SET {sets} WHERE {where}{extra} RETURNING 1"  # noqa: S608

    def param_fields(self) -> tuple:
        names = self.fields if self.insert else self.fields + self.where
        return tuple(self.model._meta.get_field(name) for name in names)


@dataclasses.dataclass(frozen=True)
class WritePlan:
    """Writes sent together (see above); built once per vendor and shape by ``write_plan``."""

    vendor: str
    writes: tuple[Write, ...]
    sql: tuple[str, ...]  # one statement on PostgreSQL, one per write elsewhere
    param_fields: tuple[tuple, ...]

    def __post_init__(self) -> None:
        found = tuple(preparers(fields, self.vendor) for fields in self.param_fields)
        object.__setattr__(self, "_preparers", found)

    def run(self, values: list[tuple]) -> list[int]:
        """Run the writes with these values (one tuple per write); per write, the rows updated or the new id."""
        db = _db()
        params = [prepared(found, row, db) for found, row in zip(self._preparers, values, strict=True)]
        if len(self.sql) == 1 and len(self.writes) > 1:
            return list(fetch_one(db, self.sql[0], [value for row in params for value in row]))
        results = []
        for write, sql, part in zip(self.writes, self.sql, params, strict=True):
            found = fetch_all(db, sql, part)
            results.append(found[0][0] if write.insert else len(found))
        return results


@functools.cache
def _write_plan(vendor: str, writes: tuple[Write, ...]) -> WritePlan:
    parts = [write.sql() for write in writes]
    fields = tuple(write.param_fields() for write in writes)
    if vendor != "postgresql" or len(writes) == 1:
        return WritePlan(vendor, writes, tuple(parts), fields)
    ctes, answers = [], []
    for index, (write, sql) in enumerate(zip(writes, parts, strict=True)):
        name = f"w{index}"
        ctes.append(f"{name} AS ({sql})")
        # rows updated: counted without count(), which would read as re-counting the table
        answers.append(f"(SELECT id FROM {name})" if write.insert else f"cardinality(ARRAY(SELECT 1 FROM {name}))")  # noqa: S608
    return WritePlan(vendor, writes, (f"WITH {', '.join(ctes)} SELECT {', '.join(answers)}",), fields)


def write_plan(*writes: Write) -> WritePlan:
    return _write_plan(_vendor(), writes)


# The game's writes (what each names is what ``ratinggame.game.gateway`` passes, in this order).
RATING_INSERT = Write(
    Rating,
    (
        *("assignment", "pair", "rater", "stage", "value", "served_at", "submitted_at"),
        *("points", "reference", "feedback", "excluded", "excluded_reason"),
    ),
    insert=True,
)
ASSIGNMENT_INSERT = Write(
    Assignment, ("rater", "pair", "stage", "served_at", "expires_at", "submitted_at", "holds_slot"), insert=True
)
# A game pair's assignment closes only while it holds its slot (else it expired and the slot went
# to someone else: the rating would overfill the pair); any other only while it is open.
GAME_ASSIGNMENT_CLOSE = Write(Assignment, ("holds_slot", "submitted_at"), where=("id", "holds_slot"))
ASSIGNMENT_CLOSE = Write(
    Assignment,
    ("holds_slot", "submitted_at"),
    where_sql=f"{column(Assignment, 'submitted_at')} IS NULL AND {column(Assignment, 'skipped_at')} IS NULL",
)
PAIR_RATED = Write(
    CaptionPair, ("human_count", "human_sum", "human_sumsq", "label_evidence", "in_flight", "assign_rank")
)
PAIR_SLOT_TAKEN = Write(CaptionPair, ("in_flight", "assign_rank"))
PROFILE_AFTER_RATING = Write(
    RaterProfile,
    (
        *("game_score", "window_count", "window_points"),
        *("game_serves", "control_owed_at", "controls_owed", "recent_images"),
    ),
)
PROFILE_SERVED = Write(RaterProfile, ("game_serves", "control_owed_at", "controls_owed", "recent_images"))
WRITES = (
    RATING_INSERT,
    ASSIGNMENT_INSERT,
    GAME_ASSIGNMENT_CLOSE,
    ASSIGNMENT_CLOSE,
    PAIR_RATED,
    PAIR_SLOT_TAKEN,
    PROFILE_AFTER_RATING,
    PROFILE_SERVED,
)
