"""A local server that speaks the parts of Prolific's API the site uses, with the request and
response shapes of Prolific's API reference (``annotators.study.prolific`` lists them), and faults
to inject: the real service cannot be reached from a test.

What it carried out is on record (``payments``: one entry per participant each time a bulk bonus
is paid, as Prolific would pay them; ``approved``), so a test can say who was paid how often,
whatever failure it injected. Faults, per route, are taken in order, one per request:

- ``"401"``, ``"429"`` (``Retry-After: 0``), ``"500"``, ``"400"``: answered so, nothing done;
- ``"late"``: nothing done, the answer held past the client's timeout;
- ``"lost"``: done, then the answer held past the client's timeout (the client never sees it);
- ``"dropped"``: done, then the connection closed without an answer.
"""

import json
import threading
import time
from collections import defaultdict, deque
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ROUTES = {
    ("GET", "/api/v1/submissions/"): "list",
    ("POST", "/api/v1/submissions/bulk-approve/"): "approve",
    ("POST", "/api/v1/submissions/bonus-payments/"): "bonus",
}
HOLD_SECONDS = 1.5  # past the timeout the tests give the client


class FakeProlific:
    def __init__(self, *, token: str = "t0ken-secret", page_size: int = 2) -> None:  # noqa: S107 (a test's)
        self.token = token
        self.page_size = page_size
        self.submissions: list[dict] = []
        self.bonuses: dict[str, dict] = {}
        self.payments: list[tuple[str, Decimal]] = []
        self.approved: list[str] = []
        self.faults: dict[str, deque] = defaultdict(deque)
        self.seen: list[tuple[str, str, str]] = []  # method, path, Authorization header
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeProlific":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fault(self, route: str, *kinds: str) -> None:
        self.faults[route].extend(kinds)

    def submission(self, participant_id: str, status: str = "AWAITING REVIEW") -> str:
        submission_id = f"sub{len(self.submissions) + 1:021d}"
        self.submissions.append(
            {"id": submission_id, "participant_id": participant_id, "status": status, "study_id": "study-1"}
        )
        return submission_id

    def paid_to(self) -> dict[str, Decimal]:
        totals: dict[str, Decimal] = defaultdict(Decimal)
        for participant, amount in self.payments:
            totals[participant] += amount
        return dict(totals)

    # --- What each route does (under the lock: one request at a time, as Prolific asks) ---

    def list_page(self, query: dict) -> dict:
        offset = int(query.get("offset", ["0"])[0])
        page = self.submissions[offset : offset + self.page_size]
        more = offset + self.page_size < len(self.submissions)
        study = query.get("study", [""])[0]
        nxt = f"{self.url}/api/v1/submissions/?study={study}&offset={offset + self.page_size}" if more else None
        return {"results": page, "_links": {"next": {"href": nxt}}, "meta": {"count": len(self.submissions)}}

    def approve(self, body: dict) -> tuple[int, dict]:
        for submission in self.submissions:
            if submission["id"] in body.get("submission_ids", []):
                submission["status"] = "APPROVED"
                self.approved.append(submission["id"])
        return 200, {}

    def bonus(self, body: dict) -> tuple[int, dict]:
        lines = []
        known = {s["participant_id"] for s in self.submissions}
        for line in body.get("csv_bonuses", "").splitlines():
            participant, amount = line.split(",")
            if participant not in known:
                return 400, {"error": {"detail": f"{participant} has not taken part in the study"}}
            lines.append((participant, Decimal(amount)))
        bonus_id = f"bb{len(self.bonuses) + 1:022d}"
        self.bonuses[bonus_id] = {"study": body.get("study_id"), "lines": lines}
        cents = int(sum(amount for _, amount in lines) * 100)
        return 201, {"id": bonus_id, "study": body.get("study_id"), "amount": cents, "fees": 0, "total_amount": cents}

    def pay(self, bonus_id: str) -> tuple[int, dict]:
        bonus = self.bonuses.get(bonus_id)
        if bonus is None:
            return 404, {"error": {"detail": "Not found."}}
        self.payments.extend(bonus["lines"])  # not idempotent: every call pays
        return 202, {}


def _handler(fake: FakeProlific):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            fake.seen.append((method, split.path, self.headers.get("Authorization", "")))
            route = ROUTES.get((method, split.path))
            if route is None and method == "POST" and split.path.startswith("/api/v1/bulk-bonus-payments/"):
                route = "pay"
            if route is None:
                return self._answer(404, {"error": {"detail": "Not found."}})
            if self.headers.get("Authorization") != f"Token {fake.token}":
                return self._answer(401, {"error": {"detail": "Invalid token."}})
            fault = fake.faults[route].popleft() if fake.faults[route] else None
            if fault in ("401", "400", "500"):
                return self._answer(int(fault), {"error": {"detail": f"injected {fault}"}})
            if fault == "429":
                return self._answer(429, {"error": {"detail": "Request was throttled."}}, {"Retry-After": "0"})
            if fault == "late":
                time.sleep(HOLD_SECONDS)
                return self._answer(504, {"error": {"detail": "late"}})
            with fake._lock:
                status, answer = self._carry_out(route, split, body)
            if fault == "lost":
                time.sleep(HOLD_SECONDS)
            if fault == "dropped":
                self.close_connection = True
                return
            self._answer(status, answer)

        def _carry_out(self, route: str, split, body: dict) -> tuple[int, dict]:
            if route == "list":
                return 200, fake.list_page(parse_qs(split.query))
            if route == "approve":
                return fake.approve(body)
            if route == "bonus":
                return fake.bonus(body)
            return fake.pay(split.path.rstrip("/").split("/")[-2])

        def _answer(self, status: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode() if body or status not in (202, 204) else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
