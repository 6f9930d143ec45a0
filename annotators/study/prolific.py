"""Prolific's API: the calls this site makes, as Prolific's API reference gives them
(docs.prolific.com/api-reference; authentication by the header ``Authorization: Token <token>``):

- ``GET /api/v1/submissions/?study=<study id>``: a study's submissions (``results``: ``id``,
  ``participant_id``, ``status``; the next page at ``_links.next.href``);
- ``POST /api/v1/submissions/bulk-approve/`` with ``{"submission_ids": [...]}``: approve them;
- ``POST /api/v1/submissions/bonus-payments/`` with ``{"study_id", "csv_bonuses"}`` (one
  ``<participant id>,<amount>`` line each, the amount in the study's currency): set up a bulk bonus,
  answered with its ``id`` (and ``amount``, ``fees``, ``total_amount`` in cents); nothing is paid yet;
- ``POST /api/v1/bulk-bonus-payments/<id>/pay/``: pay it. Not idempotent: every call pays again.

Every call has a timeout and is logged (method, path, status, seconds; never the token). A call
is repeated (after a 429, as long as its ``Retry-After`` says; after a 5xx, a timeout or a dropped
connection, with a short backoff) only where repeating it cannot pay anyone twice: listing,
approving, and setting up a bonus (an unpaid one costs nothing). The pay call is sent once; only
a refusal that proves it was not carried out (a 429, any other 4xx, a connection never made)
lets it be sent again. No library here: Prolific publishes no Python client, and these four
calls are plain JSON over HTTP (``httpx``, which the project has).
"""

import logging
import time
from collections.abc import Callable, Iterable
from decimal import Decimal

import httpx

log = logging.getLogger(__name__)

PAGE_PATH = "/api/v1/submissions/"
APPROVE_PATH = "/api/v1/submissions/bulk-approve/"
BONUS_PATH = "/api/v1/submissions/bonus-payments/"
PAY_PATH = "/api/v1/bulk-bonus-payments/{id}/pay/"
RETRY_AFTER_MAX_SECONDS = 60.0


class ProlificError(Exception):
    """A call that did not succeed. ``carried_out_unknown``: Prolific may have done it (its answer
    was lost, or it answered with a server error); otherwise it certainly did not."""

    def __init__(self, message: str, *, status: int | None = None, carried_out_unknown: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.carried_out_unknown = carried_out_unknown

    @property
    def refused(self) -> bool:
        """Prolific answered, and refused the request itself (a 4xx other than 401, 403 and 429):
        sending it again as it is would be refused again."""
        return self.status is not None and 400 <= self.status < 500 and self.status not in (401, 403, 429)


class Prolific:
    """A client of Prolific's API for one researcher's token."""

    def __init__(
        self,
        *,
        token: str,
        base_url: str,
        timeout: float = 15.0,
        retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not token:
            raise ProlificError("No Prolific API token is set (RATINGGAME_PROLIFIC_API_TOKEN).")
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers={"Authorization": f"Token {token}"}, timeout=timeout
        )
        self._retries = retries
        self._sleep = sleep

    def close(self) -> None:
        self._client.close()

    def submissions(self, study_id: str) -> list[dict]:
        """Every submission of the study, page after page."""
        found: list[dict] = []
        url, params = PAGE_PATH, {"study": study_id}
        while url:
            page = self._call("GET", url, params=params, repeatable=True)
            found.extend(page.get("results", []))
            url = ((page.get("_links") or {}).get("next") or {}).get("href") or ""
            params = None  # the next page's address carries its own query
        return found

    def approve(self, submission_ids: list[str]) -> None:
        self._call("POST", APPROVE_PATH, json={"submission_ids": submission_ids}, repeatable=True)

    def bonus_create(self, study_id: str, lines: Iterable[tuple[str, Decimal]]) -> dict:
        """Set up a bulk bonus (nothing is paid): its answer, with the ``id`` to pay it by."""
        csv_bonuses = "".join(f"{participant},{amount:.2f}\n" for participant, amount in lines)
        answer = self._call(
            "POST", BONUS_PATH, json={"study_id": study_id, "csv_bonuses": csv_bonuses}, repeatable=True
        )
        if not isinstance(answer.get("id"), str) or not answer["id"]:
            raise ProlificError("Prolific's answer to the bonus set-up has no id.", carried_out_unknown=True)
        return answer

    def bonus_pay(self, bonus_id: str) -> None:
        """Pay a bulk bonus: sent once (not idempotent)."""
        self._call("POST", PAY_PATH.format(id=bonus_id), repeatable=False)

    def _call(self, method: str, url: str, *, repeatable: bool, json=None, params=None) -> dict:
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                response = self._client.request(method, url, json=json, params=params)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                # The connection was never made: nothing reached Prolific.
                self._log(method, url, "no connection", started)
                failure, wait = ProlificError(f"Prolific could not be reached ({error.__class__.__name__})."), None
            except httpx.TransportError as error:
                self._log(method, url, f"no answer ({error.__class__.__name__})", started)
                failure = ProlificError(
                    f"Prolific's answer was lost ({error.__class__.__name__}): the call may have been carried out.",
                    carried_out_unknown=True,
                )
                wait = None
            else:
                self._log(method, url, response.status_code, started)
                if response.is_success:
                    return _body(response)
                failure = _failure(response)
                wait = _retry_after(response) if response.status_code == 429 else None
            if attempt > self._retries or not _may_repeat(failure, repeatable):
                raise failure
            self._sleep(wait if wait is not None else min(8.0, 0.5 * 2**attempt))

    @staticmethod
    def _log(method: str, url: str, outcome, started: float) -> None:
        log.info("prolific %s %s -> %s in %.2f s", method, url.split("?")[0], outcome, time.monotonic() - started)


def _body(response: httpx.Response) -> dict:
    """A success's JSON object; one that is not (a proxy's page, say) says nothing of what was done."""
    try:
        body = response.json() if response.content else {}
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ProlificError(
            f"Prolific answered {response.status_code} with a body that is not its JSON: the call may have been "
            "carried out.",
            status=None,
            carried_out_unknown=True,
        )
    return body


def _may_repeat(failure: ProlificError, repeatable: bool) -> bool:
    """Whether a failed call may be sent again: a 429 or a connection never made was not carried
    out (any call may go again); a lost answer or a server error may have been (only a call that
    cannot pay twice goes again); any other refusal would be refused again."""
    if failure.status == 429 or (failure.status is None and not failure.carried_out_unknown):
        return True
    return failure.carried_out_unknown and repeatable


def _failure(response: httpx.Response) -> ProlificError:
    status = response.status_code
    if status in (401, 403):
        return ProlificError(
            f"Prolific refused the API token ({status}): check RATINGGAME_PROLIFIC_API_TOKEN.", status=status
        )
    if status == 429:
        return ProlificError("Prolific asked to slow down (429) more times than this site retries.", status=status)
    detail = response.text[:300]
    if status >= 500:
        return ProlificError(
            f"Prolific answered {status} (a server error): the call may have been carried out. {detail}",
            status=status,
            carried_out_unknown=True,
        )
    return ProlificError(f"Prolific refused the request ({status}): {detail}", status=status)


def _retry_after(response: httpx.Response) -> float:
    try:
        seconds = float(response.headers.get("Retry-After", "1"))
    except ValueError:
        seconds = 1.0
    return min(max(seconds, 0.0), RETRY_AFTER_MAX_SECONDS)
