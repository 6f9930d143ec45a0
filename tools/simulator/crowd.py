"""A simulated crowd that plays the rating game through the HTTP API only (issue 7).

Each simulated rater has a latent competency ``c`` in [0, 1]: the noise its ratings add to a
hidden true quality ``q`` (1..5) of each pair. A rating is

    x = clip(round_half_up(q + N(0, sd(c))), 1, 5),  sd(c) = SD_BEST + (SD_WORST - SD_BEST) * (1 - c)

and, for the worst raters (c below RANDOM_BELOW), a share ``RANDOM_SHARE_WORST * (1 - c /
RANDOM_BELOW)`` of uniformly random ratings instead. The true quality of a tutorial or
probation pair is its expert rating (read through the researcher API when a token is given);
of a game pair the simulator created itself (``--setup``), the quality it assigned; of any
other pair, a hash of the pair id and the seed (:func:`true_quality`).

Beside the honest raters, a run may add raters who turn bad once they qualified (SPEC 2.5's
drift): ``straight_liners`` always answer 3 and ``random_clickers`` answer uniformly at random
from the moment their qualification window passed; before it they rate like the best honest
rater; ``careless`` raters answer at random from their first pair. They are not in the
competency correlations.

Raters sign up (``POST /api/auth/signup``, which answers a token), consent, and play the
tutorial, probation where they fail, and the game, through ``/api/game/*``, exactly as a
script would. The first ``prolific`` raters come through a Prolific study link instead
(``/study/enter/?PROLIFIC_PID=...``, each with its own browser session and CSRF token, as a
participant's browser has): their session ends where the study says (the quota, or the
screen-out), which the server answers with ``session_ended``, and they read their code from
``/api/study/session``. The server's delay is honoured: a rating is sent no earlier than
``min_submit_at - served_at`` after the served answer arrived, which is at or after
``min_submit_at`` on the server's clock whatever the client's clock says. A rater stops
after its share of scored game ratings (pairs x RATINGS_PER_PAIR / raters), when the game
runs dry, or after ``max_probation_rounds`` failed probation rounds.

The share counts the game ratings behind the rater's current game score: a failed
qualification window (or the drift rule) resets the score to 0 and excludes ratings, so it
resets the count too. Every rater that finishes its share then has a score made of the same number of
ratings, and the score ranks competency rather than luck in the first window. With the
count kept across a reset instead, an offline replay of the game's rules (12 raters x 300
pairs, 100 ratings each, 200 seeds) gave Spearman rho below 0.8 in 15% of the runs; with the
reset, never (min 0.85, mean 0.95).

Transient failures (connection errors, timeouts, 5xx, 429) are retried with exponential
backoff for up to ``retry_seconds``: serving is reload-safe and submitting is idempotent on
the server, so a retried request never makes a second assignment or rating. Only answered
ratings (200 with a feedback body) count as acknowledged.

No Django import: this is a plain HTTP client (httpx, asyncio), usable from the management
command, tests and benchmarks alike. The report arithmetic is in tools.simulator.report.
"""

import asyncio
import hashlib
import math
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import httpx
import numpy as np

from tools.simulator.report import build_report
from tools.simulator.setup import expert_ratings, pairs_by_content, pairs_setup

RATINGS_PER_PAIR = 4  # the share of game ratings per rater is pairs x this / raters
SD_BEST = 0.1  # noise sd of a rater of competency 1: always rounds to the true quality
SD_WORST = 1.5  # noise sd of a rater of competency 0: exact only ~26% of the time
RANDOM_BELOW = 0.3  # raters below this competency also give some uniformly random ratings
RANDOM_SHARE_WORST = 0.3  # share of random ratings at competency 0
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
NONE_LEFT_TRIES = 4  # "none_left" can be momentary: every open slot is held by another rater
TOO_EARLY_TRIES = 5
BACKOFF_FIRST = 0.05
BACKOFF_MAX = 2.0
# Password hashing is slow by design (and slower with many sign-ups at once): sign-up and
# log-in get at least this long before a request counts as timed out.
SIGNUP_TIMEOUT = 60.0


# --- The crowd model (pure) -----------------------------------------------------------------


def noise_sd(competency: float) -> float:
    """The sd of the Gaussian noise a rater of this competency adds to the true quality."""
    return SD_BEST + (SD_WORST - SD_BEST) * (1.0 - competency)


def random_share(competency: float) -> float:
    """Share of uniformly random ratings: RANDOM_SHARE_WORST at 0, falling to 0 at RANDOM_BELOW."""
    return RANDOM_SHARE_WORST * max(0.0, 1.0 - competency / RANDOM_BELOW)


def true_quality(pair_id: int, seed: int) -> int:
    """A pair's hidden true quality 1..5 from its id and the seed (sha256, so stable across runs)."""
    digest = hashlib.sha256(f"{seed}:{pair_id}".encode()).digest()
    return 1 + int.from_bytes(digest[:8], "big") % 5


def competencies(raters: int, seed: int, low: float = 0.0, high: float = 1.0) -> list[float]:
    """Evenly spread competencies low + (high - low) (i + 0.5) / n, in an order shuffled by the seed.

    Even spacing, not random draws, so that every run has the same spread to recover; the
    shuffle keeps competency independent of sign-up order.
    """
    values = [low + (high - low) * (index + 0.5) / raters for index in range(raters)]
    random.Random(seed).shuffle(values)
    return values


def rating_rng(seed: int, rater: int, pair_id: int, occurrence: int) -> np.random.Generator:
    """The random stream of one rating: the same rater rates the same pair the same way in every run."""
    return np.random.default_rng([seed, rater, pair_id, occurrence])


def simulated_rating(quality: int, competency: float, rng: np.random.Generator) -> int:
    """A rater's rating of a pair of true ``quality`` (see the module docstring)."""
    if rng.random() < random_share(competency):
        return int(rng.integers(1, 6))
    noisy = quality + rng.normal(0.0, noise_sd(competency))
    return int(min(5, max(1, math.floor(noisy + 0.5))))


def game_share(pairs: int, raters: int) -> int:
    """Game ratings each rater makes: pairs x RATINGS_PER_PAIR / raters, rounded up."""
    return max(1, math.ceil(pairs * RATINGS_PER_PAIR / raters))


def rating_of(outcome: "RaterOutcome", truth: int, rng: np.random.Generator) -> int:
    """The rating this rater gives a pair of true quality ``truth`` now."""
    rater = outcome.rater
    if rater.kind == CARELESS or (rater.kind != HONEST and outcome.qualified):
        return 3 if rater.kind == STRAIGHT else int(rng.integers(1, 6))
    return simulated_rating(truth, rater.competency, rng)


# --- Configuration and records ----------------------------------------------------------------


@dataclass(frozen=True)
class CrowdConfig:
    server: str
    raters: int
    pairs: int
    seed: int = 0
    concurrency: int | None = None  # HTTP requests in flight at most; default: one per rater
    timeout: float = 10.0  # seconds per HTTP request
    admin_token: str | None = None  # researcher/admin token: expert ratings, and --setup
    setup: bool = False  # create the tutorial/probation pools (when empty) and `pairs` game pairs
    max_probation_rounds: int = 2
    retry_seconds: float = 60.0  # how long a transient failure is retried before giving up
    share: int | None = None  # game ratings per rater; default game_share(pairs, raters)
    tag: str | None = None  # distinguishes this run's usernames and captions; default random
    competency_range: tuple[float, float] = (0.0, 1.0)  # where the honest raters' competencies lie
    straight_liners: int = 0  # raters who answer 3 once qualified
    random_clickers: int = 0  # raters who answer at random once qualified
    careless: int = 0  # raters who answer at random from their first pair (a tutorial they do not try)
    prolific: int = 0  # the first raters enter through a Prolific study link instead of signing up
    study_id: str = "sim-study"  # the STUDY_ID of their links

    def game_share(self) -> int:
        return self.share if self.share is not None else game_share(self.pairs, self.raters)


HONEST, STRAIGHT, RANDOM, CARELESS = "honest", "straight_liner", "random_clicker", "careless"


@dataclass(frozen=True)
class SimRater:
    index: int
    competency: float
    kind: str = HONEST  # once qualified, a straight-liner answers 3 and a random clicker at random


@dataclass(frozen=True)
class Ack:
    """A rating the server acknowledged (200 with its feedback)."""

    rater: int
    user_id: int
    assignment_id: int
    rating_id: int
    pair_id: int
    stage: str
    value: int
    truth: int
    points: int
    stage_total: int
    transition: str | None
    at: float  # seconds since the start of the run


@dataclass
class RaterOutcome:
    rater: SimRater
    username: str = ""
    user_id: int | None = None
    participant_id: str = ""  # a Prolific participant's id ("" for a rater who signed up)
    session_outcome: str = ""  # completed or screened_out, as the server said at the end
    session_code: str = ""
    game_ratings: int = 0  # every acknowledged game rating, excluded ones too
    scored_ratings: int = 0  # the game ratings behind the current game score (the share)
    game_score: int = 0
    probation_failed: int = 0
    windows_failed: int = 0
    drifts: int = 0  # sent back to probation by the drift rule
    qualified: bool = False  # a qualification window passed
    last_stage: str = ""
    ended: str = ""


@dataclass
class Recorder:
    """What the run saw: acknowledged ratings, errors by kind, latencies of answered requests."""

    started: float = field(default_factory=time.perf_counter)
    acks: list[Ack] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    gave_up: Counter = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    on_ack: Callable[[Ack], None] | None = None

    def now(self) -> float:
        return time.perf_counter() - self.started

    def latency(self, kind: str, seconds: float) -> None:
        self.latencies.setdefault(kind, []).append(seconds)

    def error(self, kind: str, reason: str) -> None:
        self.errors[f"{kind}:{reason}"] += 1

    def ack(self, ack: Ack) -> None:
        self.acks.append(ack)
        if self.on_ack is not None:
            self.on_ack(ack)


class GaveUp(Exception):
    """A transient failure outlasted retry_seconds."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


class Refused(Exception):
    """The server refused a step of the journey for good (not a transient failure)."""

    def __init__(self, kind: str, code: str) -> None:
        super().__init__(f"{kind}: {code}")
        self.kind = kind
        self.code = code


# --- HTTP -------------------------------------------------------------------------------------


def error_code(response: httpx.Response) -> str:
    """The API's error code (``{"error": {"code": ...}}``), or http_<status> for another body."""
    try:
        body = response.json()
    except ValueError:
        return f"http_{response.status_code}"
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and code else f"http_{response.status_code}"


def _transport_reason(error: httpx.TransportError) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    if isinstance(error, httpx.ConnectError):
        return "connect_error"
    return "transport_error"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else None


class Session:
    """One rater's (or the researcher's) calls: its token, retries, error and latency records."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        limiter: asyncio.Semaphore,
        recorder: Recorder,
        *,
        retry_seconds: float,
        token: str | None = None,
    ) -> None:
        self.http = http
        self.limiter = limiter
        self.recorder = recorder
        self.retry_seconds = retry_seconds
        self.token = token

    def _headers(self) -> dict:
        """The token's header; for a browser session (no token), its CSRF token, as a page's script sends it."""
        if self.token:
            return {"Authorization": f"Token {self.token}"}
        csrf = self.http.cookies.get("csrftoken")
        return {"X-CSRFToken": csrf} if csrf else {}

    async def request(self, kind: str, method: str, path: str, **kwargs) -> httpx.Response:
        """The first answer that is not a transient failure; raises GaveUp after retry_seconds."""
        headers = {**self._headers(), **kwargs.pop("headers", {})}
        deadline = time.perf_counter() + self.retry_seconds
        backoff = BACKOFF_FIRST
        while True:
            wait = None
            try:
                async with self.limiter:
                    started = time.perf_counter()
                    response = await self.http.request(method, path, headers=headers, **kwargs)
                    elapsed = time.perf_counter() - started
            except httpx.TransportError as error:
                reason = _transport_reason(error)
            else:
                status = response.status_code
                if status not in TRANSIENT_STATUSES and status != 429:
                    self.recorder.latency(kind, elapsed)
                    return response
                reason = "throttled" if status == 429 else f"http_{status}"
                wait = _retry_after(response) if status == 429 else None
            self.recorder.error(kind, reason)
            # Jitter spreads the retries of many raters after one outage.
            delay = wait if wait is not None else backoff * (0.5 + random.random())
            if time.perf_counter() + delay > deadline:
                self.recorder.gave_up[f"{kind}:{reason}"] += 1
                raise GaveUp(kind, reason)
            await asyncio.sleep(delay)
            backoff = min(backoff * 2, BACKOFF_MAX)


# --- A rater's journey ------------------------------------------------------------------------


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class Crowd:
    """Runs the simulated raters against a server; see :func:`crowd_simulate`."""

    def __init__(self, config: CrowdConfig, recorder: Recorder) -> None:
        self.config = config
        self.recorder = recorder
        self.tag = config.tag or secrets.token_hex(4)
        self.share = config.game_share()
        self.truths: dict[int, int] = {}  # pair id -> true quality, where known
        self.pair_ids: dict[tuple[str, str], int] = {}  # (image URL, caption) -> pair id, with a researcher token
        self.truth_source = "hash"

    def pair_of(self, served: dict) -> int:
        """The served pair's id where the researcher API listed it; otherwise a stable number from
        what was shown (from 2**48 up, so never a real id, and non-negative, as a seed must be)."""
        shown = (served["image_url"], served["caption"])
        known = self.pair_ids.get(shown)
        if known is not None:
            return known
        digest = hashlib.sha256("\n".join(shown).encode()).digest()
        return 2**48 + int.from_bytes(digest[:6], "big")

    def truth_of(self, pair_id: int) -> int:
        known = self.truths.get(pair_id)
        return known if known is not None else true_quality(pair_id, self.config.seed)

    async def signup(self, session: Session, outcome: RaterOutcome) -> None:
        """Sign up (the answer carries a token) and consent."""
        username = f"sim-{self.tag}-{outcome.rater.index}"
        password = secrets.token_urlsafe(18)
        credentials = {"username": username, "password": password}
        timeout = max(self.config.timeout, SIGNUP_TIMEOUT)
        response = await session.request("signup", "POST", "/api/auth/signup", json=credentials, timeout=timeout)
        if response.status_code == 400 and "username" in str(response.json().get("error", {}).get("details")):
            # An earlier attempt created the account but its answer was lost: log in instead.
            response = await session.request("token", "POST", "/api/auth/token", json=credentials, timeout=timeout)
        if response.status_code not in (200, 201):
            self.recorder.error("signup", error_code(response))
            raise Refused("signup", error_code(response))
        body = response.json()
        session.token = body["token"]
        outcome.username = username
        outcome.user_id = body.get("id")
        consent = await session.request("consent", "POST", "/api/game/consent", json={"agree": True})
        if consent.status_code != 200:
            self.recorder.error("consent", error_code(consent))
            raise Refused("consent", error_code(consent))
        if outcome.user_id is None:
            outcome.user_id = -1  # logged in after a lost sign-up answer: the id is not told

    async def enter(self, session: Session, outcome: RaterOutcome) -> None:
        """Follow a Prolific study link (a browser session of its own), open the consent page (its
        CSRF cookie), and consent."""
        digest = hashlib.sha256(f"{self.tag}:{outcome.rater.index}".encode()).hexdigest()
        outcome.participant_id = digest[:24]
        link = {"PROLIFIC_PID": outcome.participant_id, "STUDY_ID": self.config.study_id, "SESSION_ID": digest[24:48]}
        entered = await session.request("enter", "GET", "/study/enter/", params=link, follow_redirects=True)
        if entered.status_code != 200 or "csrftoken" not in session.http.cookies:
            self.recorder.error("enter", f"http_{entered.status_code}")
            raise Refused("enter", f"http_{entered.status_code}")
        outcome.username = f"prolific:{outcome.participant_id}"
        outcome.user_id = -1  # the API does not tell a participant's user id
        consent = await session.request("consent", "POST", "/api/game/consent", json={"agree": True})
        if consent.status_code != 200:
            self.recorder.error("consent", error_code(consent))
            raise Refused("consent", error_code(consent))

    async def session_read(self, session: Session, outcome: RaterOutcome) -> None:
        """A participant's end: the outcome and the code, as ``GET /api/study/session`` says."""
        answer = await session.request("session", "GET", "/api/study/session")
        if answer.status_code == 200:
            body = answer.json()
            outcome.session_outcome, outcome.session_code = body.get("outcome", ""), body.get("code", "")

    async def play(self, session: Session, outcome: RaterOutcome) -> None:
        """Rate until the share is done, the game runs dry, or probation is failed too often."""
        config = self.config
        occurrences: Counter = Counter()
        none_left = 0
        # A bound on serves, so that no server answer can keep a rater looping for ever.
        serve_budget = 4 * (self.share + 10 + 20 * (config.max_probation_rounds + 1) * 2)
        while outcome.scored_ratings < self.share:
            serve_budget -= 1
            if serve_budget < 0:
                outcome.ended = "serve_budget"
                return
            response = await session.request("serve", "POST", "/api/game/next")
            if response.status_code != 200:
                code = error_code(response)
                if code != "session_ended":  # a participant's session ends so: not an error
                    self.recorder.error("serve", code)
                outcome.ended = code
                return
            served = response.json()
            if served.get("code") == "none_left":
                none_left += 1
                if none_left >= NONE_LEFT_TRIES:
                    outcome.ended = "dry"
                    return
                await asyncio.sleep(0.1 * 2**none_left)
                continue
            none_left = 0
            received = time.perf_counter()
            pair_id, stage = self.pair_of(served), served["stage"]
            outcome.last_stage = stage
            truth = self.truth_of(pair_id)
            occurrences[pair_id] += 1
            rng = rating_rng(config.seed, outcome.rater.index, pair_id, occurrences[pair_id])
            value = rating_of(outcome, truth, rng)
            # The server's delay, counted from when its answer arrived: never early on its clock.
            delay = (_parse_time(served["min_submit_at"]) - _parse_time(served["served_at"])).total_seconds()
            await asyncio.sleep(max(0.0, received + delay - time.perf_counter()))
            feedback = await self.submit(session, served["assignment_id"], value)
            if feedback is None:
                continue
            self.recorder.ack(
                Ack(
                    rater=outcome.rater.index,
                    user_id=outcome.user_id or -1,
                    assignment_id=feedback["assignment_id"],
                    rating_id=feedback["rating_id"],
                    pair_id=pair_id,
                    stage=feedback["stage"],
                    value=feedback["value"],
                    truth=truth,
                    points=feedback["points"],
                    stage_total=feedback["stage_total"],
                    transition=feedback["transition"],
                    at=self.recorder.now(),
                )
            )
            if feedback["stage"] == "game":
                outcome.game_ratings += 1
                outcome.scored_ratings += 1
                outcome.game_score = feedback["stage_total"]  # 0 after a failed window
            if feedback["transition"] == "window_passed":
                outcome.qualified = True
            if feedback["transition"] in ("window_failed", "drift"):
                outcome.windows_failed += feedback["transition"] == "window_failed"
                outcome.drifts += feedback["transition"] == "drift"
                outcome.scored_ratings = 0  # ratings excluded, their points gone
            if feedback.get("session_ended"):
                outcome.ended = "session_ended"
                return
            if feedback["transition"] == "probation_failed":
                outcome.probation_failed += 1
                if outcome.probation_failed >= config.max_probation_rounds and not outcome.participant_id:
                    outcome.ended = "probation"
                    return
        outcome.ended = "share"

    async def submit(self, session: Session, assignment_id: int, value: int) -> dict | None:
        """The feedback of an acknowledged rating; None when the server refused it for good."""
        body = {"assignment_id": assignment_id, "value": value}
        for attempt in range(TOO_EARLY_TRIES):
            response = await session.request("submit", "POST", "/api/game/submit", json=body)
            if response.status_code == 200:
                return response.json()
            code = error_code(response)
            self.recorder.error("submit", code)
            if code != "too_early":
                return None
            await asyncio.sleep(BACKOFF_FIRST * 2**attempt)
        return None

    async def rater_run(self, session: Session, outcome: RaterOutcome) -> None:
        if outcome.ended:  # sign-up failed
            return
        try:
            await self.play(session, outcome)
            if outcome.participant_id:
                await self.session_read(session, outcome)
        except GaveUp as error:
            outcome.ended = f"gave_up:{error.kind}:{error.reason}"

    def _client(self) -> httpx.AsyncClient:
        concurrency = self.config.concurrency or self.config.raters
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        return httpx.AsyncClient(base_url=self.config.server, timeout=self.config.timeout, limits=limits)

    async def setup(self) -> None:
        """With a researcher token: create the pairs (``setup``) and read the expert ratings."""
        config = self.config
        if not config.admin_token:
            return
        async with self._client() as http:
            staff = Session(http, asyncio.Semaphore(1), self.recorder, retry_seconds=config.retry_seconds)
            staff.token = config.admin_token
            if config.setup:
                self.truths.update(await pairs_setup(staff, pairs=config.pairs, seed=config.seed, tag=self.tag))
                self.truth_source = "setup"
            self.truths.update(await expert_ratings(staff))
            self.pair_ids = await pairs_by_content(staff)

    async def play_all(self, timings: dict[str, float]) -> list[RaterOutcome]:
        config = self.config
        limiter = asyncio.Semaphore(config.concurrency or config.raters)
        honest = competencies(config.raters, config.seed, *config.competency_range)
        bad = [STRAIGHT] * config.straight_liners + [RANDOM] * config.random_clickers + [CARELESS] * config.careless
        outcomes = [RaterOutcome(SimRater(index, competency)) for index, competency in enumerate(honest)]
        outcomes += [
            RaterOutcome(SimRater(len(honest) + index, max(honest, default=1.0), kind))
            for index, kind in enumerate(bad)
        ]
        async with self._client() as http:
            # A participant's browser: a client (a cookie jar) of its own.
            browsers = [self._client() for _ in range(min(config.prolific, len(outcomes)))]
            clients = browsers + [http] * (len(outcomes) - len(browsers))
            sessions = [Session(c, limiter, self.recorder, retry_seconds=config.retry_seconds) for c in clients]
            joins = [self.enter if index < len(browsers) else self.signup for index in range(len(outcomes))]
            # All sign up first (password hashing is slow by design), then all play, so that
            # the throughput figure is about rating.
            results = await asyncio.gather(
                *(join(s, o) for join, s, o in zip(joins, sessions, outcomes, strict=True)), return_exceptions=True
            )
            for outcome, result in zip(outcomes, results, strict=True):
                if isinstance(result, GaveUp | Refused):
                    outcome.ended = f"signup_failed:{result}"
                elif isinstance(result, BaseException):
                    raise result
            timings["signup_done"] = self.recorder.now()
            await asyncio.gather(*(self.rater_run(s, o) for s, o in zip(sessions, outcomes, strict=True)))
            timings["play_done"] = self.recorder.now()
            for browser in browsers:
                await browser.aclose()
        return outcomes


@dataclass
class SimulationResult:
    report: dict
    acks: list[Ack]
    outcomes: list[RaterOutcome]
    truths: dict[int, int]


def crowd_simulate(
    config: CrowdConfig,
    *,
    on_ack: Callable[[Ack], None] | None = None,
    after_setup: Callable[[dict[int, int]], None] | None = None,
) -> SimulationResult:
    """Run the crowd against ``config.server`` and report (see tools.simulator.report).

    ``on_ack`` is called (in the simulator's thread) for every acknowledged rating, and
    ``after_setup`` with pair id -> true quality once the pairs are set up, before anyone signs
    up (outside the event loop, so it may use the ORM): tests use them to act on the server.
    """
    if config.raters < 1 or config.pairs < 1:
        raise ValueError("raters and pairs must be at least 1")
    if config.setup and not config.admin_token:
        raise ValueError("--setup creates pairs through the researcher API: give --admin-token")
    recorder = Recorder(on_ack=on_ack)
    crowd = Crowd(config, recorder)
    asyncio.run(crowd.setup())
    if after_setup is not None:
        after_setup(dict(crowd.truths))
    timings = {"setup_done": recorder.now()}
    outcomes = asyncio.run(crowd.play_all(timings))
    report = build_report(
        config=config,
        share=crowd.share,
        truth_source=crowd.truth_source,
        outcomes=outcomes,
        recorder=recorder,
        timings=timings,
    )
    return SimulationResult(report=report, acks=list(recorder.acks), outcomes=outcomes, truths=dict(crowd.truths))
