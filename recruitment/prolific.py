"""Prolific's REST API, as its official client (github.com/prolific-oss/cli, client/*.go) calls it: the
paths, payloads and answers used to run a study from here. One client per token; the token goes into the
Authorization header and nowhere else (errors, reprs and dry-run output never carry it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

SUBMISSIONS_PAGE = 100
# The categories a rejection must give (cmd/submission/transition.go).
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
REJECTION_MESSAGE_MIN = 100  # Prolific refuses a rejection message shorter than this
STUDY_ACTIONS = ("PUBLISH", "START", "PAUSE", "STOP")
# The hook event this app takes in (docs.prolific.com, Webhooks > Receiving); GET /api/v1/hooks/event-types/
# lists what a workspace may subscribe to.
SUBMISSION_STATUS_EVENT = "submission.status.change"
# The statuses a submission can have (model/submission_counts.go: the keys of GET .../submissions/counts/).
SUBMISSION_STATUSES = (
    "ACTIVE",
    "APPROVED",
    "AWAITING REVIEW",
    "REJECTED",
    "RESERVED",
    "RETURNED",
    "TIMED-OUT",
    "PARTIALLY APPROVED",
    "SCREENED OUT",
)
REDACTED = "Token ********"


class ProlificError(Exception):
    """Prolific refused a call, or could not be reached. The message names the call and Prolific's reason."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class ProlificTimeout(ProlificError):
    """No answer in time: the call may or may not have taken effect on Prolific."""


@dataclass(frozen=True)
class Study:
    id: str
    status: str
    name: str = ""
    total_available_places: int = 0
    reward: float = 0
    external_study_url: str = ""

    @classmethod
    def from_json(cls, data: dict) -> Study:
        return cls(
            id=str(data["id"]),
            status=str(data.get("status", "")),
            name=str(data.get("name", "")),
            total_available_places=int(data.get("total_available_places") or 0),
            reward=float(data.get("reward") or 0),
            external_study_url=str(data.get("external_study_url") or ""),
        )


@dataclass(frozen=True)
class Submission:
    id: str
    participant_id: str
    status: str
    study_code: str = ""
    started_at: str | None = None
    completed_at: str | None = None
    time_taken: int | None = None
    bonus_payments: list = field(default_factory=list)
    study_id: str = ""

    @classmethod
    def from_json(cls, data: dict) -> Submission:
        return cls(
            id=str(data["id"]),
            study_id=str(data.get("study_id") or ""),
            participant_id=str(data.get("participant_id") or data.get("participant") or ""),
            status=str(data.get("status", "")),
            study_code=str(data.get("study_code") or ""),
            started_at=data.get("started_at"),
            completed_at=data.get("completed_at"),
            time_taken=data.get("time_taken"),
            bonus_payments=list(data.get("bonus_payments") or []),
        )


@dataclass(frozen=True)
class BonusSetUp:
    id: str
    amount: float
    total_amount: float


@dataclass(frozen=True)
class Group:
    id: str
    name: str
    participant_count: int = 0


@dataclass(frozen=True)
class Hook:
    """A hook subscription (model/hook.go): Prolific calls `target_url` on each `event_type` of the workspace."""

    id: str
    event_type: str
    target_url: str
    is_enabled: bool = False
    workspace_id: str = ""

    @classmethod
    def from_json(cls, data: dict) -> Hook:
        return cls(
            id=str(data["id"]),
            event_type=str(data.get("event_type", "")),
            target_url=str(data.get("target_url", "")),
            is_enabled=bool(data.get("is_enabled")),
            workspace_id=str(data.get("workspace_id") or ""),
        )


def _error_detail(response: httpx.Response) -> str:
    """Prolific's two error shapes (client.go): {"error": {"detail": ...}} and {"message", "detail"}."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and body["error"].get("detail") is not None:
        return str(body["error"]["detail"])[:500]
    if isinstance(body, dict) and body.get("detail"):
        return f"{body.get('message', '')} {body['detail']}".strip()[:500]
    return str(body)[:300]


class ProlificClient:
    def __init__(self, token: str, base_url: str | None = None, transport: httpx.BaseTransport | None = None):
        if not token:
            raise ProlificError("no Prolific API token is set for this study")
        self._http = httpx.Client(
            base_url=(base_url or settings.PROLIFIC_API_URL).rstrip("/"),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            timeout=settings.PROLIFIC_TIMEOUT_SECONDS,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"ProlificClient({self._http.base_url})"

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200, 201)) -> Any:
        response = self._send(method, path, body, expect)
        return response.json() if response.content else None

    def _send(self, method: str, path: str, body: Any, expect: tuple[int, ...]) -> httpx.Response:
        try:
            response = (
                self._http.request(method, path, json=body) if body is not None else self._http.request(method, path)
            )
        except httpx.TimeoutException:
            raise ProlificTimeout(f"{method} {path}: Prolific did not answer in time") from None
        except httpx.HTTPError as error:
            raise ProlificError(f"{method} {path}: Prolific could not be reached ({type(error).__name__})") from None
        if response.status_code >= 400 or response.status_code not in expect:
            raise ProlificError(
                f"{method} {path}: Prolific answered {response.status_code}: {_error_detail(response)}",
                response.status_code,
            )
        return response

    # ------------------------------------------------------------------ studies

    def create_study(self, payload: dict) -> Study:
        return Study.from_json(self._call("POST", "/api/v1/studies/", payload, expect=(201,)))

    def get_study(self, study_id: str) -> Study:
        return Study.from_json(self._call("GET", f"/api/v1/studies/{study_id}"))

    def update_study(self, study_id: str, changes: dict) -> Study:
        return Study.from_json(self._call("PATCH", f"/api/v1/studies/{study_id}/", changes))

    def transition_study(self, study_id: str, action: str) -> Study:
        if action not in STUDY_ACTIONS:
            raise ProlificError(f"unknown study action {action!r} (one of {', '.join(STUDY_ACTIONS)})")
        return Study.from_json(self._call("POST", f"/api/v1/studies/{study_id}/transition/", {"action": action}))

    def filter_choices(self, filter_ids: list[str]) -> dict[str, dict[str, str]]:
        """For each of these filters Prolific lists, its choices as {name: choice id} (GET /api/v1/filters/:
        a "select" filter's `choices` map ids to names). A filter Prolific does not list is left out."""
        data = self._call("GET", "/api/v1/filters/")
        return {
            row["filter_id"]: {str(name): str(choice) for choice, name in (row.get("choices") or {}).items()}
            for row in data.get("results", [])
            if row.get("filter_id") in filter_ids
        }

    # ------------------------------------------------------------------ submissions

    def submissions(self, study_id: str) -> Iterator[Submission]:
        """Every submission of the study, page after page."""
        offset = 0
        while True:
            page = self._call(
                "GET", f"/api/v1/studies/{study_id}/submissions/?limit={SUBMISSIONS_PAGE}&offset={offset}"
            )
            results = page.get("results", [])
            yield from (Submission.from_json(row) for row in results)
            offset += len(results)
            total = (page.get("meta") or {}).get("count")
            more = ((page.get("_links") or page.get("links") or {}).get("next") or {}).get("href")
            if not results or (total is not None and offset >= total) or (total is None and not more):
                return

    def get_submission(self, submission_id: str) -> Submission:
        return Submission.from_json(self._call("GET", f"/api/v1/submissions/{submission_id}/"))

    def transition_submission(
        self,
        submission_id: str,
        action: str,
        message: str = "",
        rejection_category: str = "",
        completion_code: str = "",
    ) -> Submission:
        """TransitionSubmissionPayload (client/payloads.go). A screen-out names the study's screen-out code
        (docs.prolific.com, Submissions > Transition: the code must be one the study was created with)."""
        payload: dict[str, str] = {"action": action}
        if message:
            payload["message"] = message
        if rejection_category:
            payload["rejection_category"] = rejection_category
        if completion_code:
            payload["completion_code"] = completion_code
        answer = self._call("POST", f"/api/v1/submissions/{submission_id}/transition/", payload)
        return Submission.from_json(answer)

    def bulk_approve(self, submission_ids: list[str]) -> None:
        """The first of bulk approve's two forms: submission ids alone (the other is study_id with
        participant_ids; cmd/submission/bulk_approve.go refuses a mix). Prolific may take it to do later (202)."""
        self._call("POST", "/api/v1/submissions/bulk-approve/", {"submission_ids": submission_ids}, expect=(200, 202))

    def request_return(self, submission_id: str, reasons: list[str]) -> None:
        self._call("POST", f"/api/v1/submissions/{submission_id}/request-return/", {"request_return_reasons": reasons})

    # ------------------------------------------------------------------ bonuses

    def set_up_bonuses(self, study_id: str, rows: list[tuple[str, str]]) -> BonusSetUp:
        """Prolific's bonus set-up: one CSV line "participant_id,amount" a bonus. Nothing is paid yet."""
        csv = "\n".join(f"{participant},{amount}" for participant, amount in rows)
        data = self._call(
            "POST", "/api/v1/submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv}, expect=(201,)
        )
        return BonusSetUp(str(data["id"]), float(data.get("amount") or 0), float(data.get("total_amount") or 0))

    def pay_bonuses(self, bulk_id: str) -> None:
        """Pay a set-up. Not idempotent on Prolific's side: callers go through the ledger (services.bonuses)."""
        self._call("POST", f"/api/v1/bulk-bonus-payments/{bulk_id}/pay/", expect=(202,))

    # ------------------------------------------------------------------ participant groups

    def create_group(self, name: str, workspace_id: str, participant_ids: list[str], description: str = "") -> Group:
        """Prolific requires the workspace (or organisation) the group belongs to (docs.prolific.com,
        Participant groups > Create)."""
        if not workspace_id:
            raise ProlificError("a participant group needs the workspace it belongs to (workspace_id)")
        payload: dict[str, Any] = {"name": name, "participant_ids": participant_ids, "workspace_id": workspace_id}
        if description:
            payload["description"] = description
        data = self._call("POST", "/api/v1/participant-groups/", payload)
        return Group(str(data["id"]), str(data.get("name", name)), int(data.get("participant_count") or 0))

    def group_members(self, group_id: str) -> list[str]:
        data = self._call("GET", f"/api/v1/participant-groups/{group_id}/participants/")
        return [row["participant_id"] for row in data.get("results", [])]

    def add_group_members(self, group_id: str, participant_ids: list[str]) -> None:
        path = f"/api/v1/participant-groups/{group_id}/participants/"
        self._call("POST", path, {"participant_ids": participant_ids})

    def remove_group_members(self, group_id: str, participant_ids: list[str]) -> None:
        path = f"/api/v1/participant-groups/{group_id}/participants/"
        self._call("DELETE", path, {"participant_ids": participant_ids})

    # ------------------------------------------------------------------ hooks (client.go: GetHookEventTypes,
    # CreateHookSecret, CreateHookSubscription, ConfirmHookSubscription, DeleteHookSubscription)

    def hook_event_types(self) -> list[str]:
        data = self._call("GET", "/api/v1/hooks/event-types/")
        return [str(row.get("event_type", "")) for row in data.get("results", [])]

    def create_hook_secret(self, workspace_id: str) -> str:
        """A new signing secret for the workspace's hooks; it replaces the one before (one a workspace)."""
        data = self._call("POST", "/api/v1/hooks/secrets/", {"workspace_id": workspace_id}, expect=(201,))
        return str(data.get("value") or "")

    def create_hook_subscription(self, event_type: str, target_url: str, workspace_id: str) -> tuple[Hook, str]:
        """The subscription, not yet enabled, and the one-time X-Hook-Secret that confirms it (not the
        signing secret)."""
        payload = {"event_type": event_type, "target_url": target_url, "workspace_id": workspace_id}
        response = self._send("POST", "/api/v1/hooks/subscriptions/", payload, expect=(201,))
        return Hook.from_json(response.json()), response.headers.get("X-Hook-Secret", "")

    def confirm_hook_subscription(self, subscription_id: str, confirm_secret: str) -> Hook:
        path = f"/api/v1/hooks/subscriptions/{subscription_id}/"
        return Hook.from_json(self._call("POST", path, {"secret": confirm_secret}, expect=(200,)))

    def delete_hook_subscription(self, subscription_id: str) -> None:
        self._call("DELETE", f"/api/v1/hooks/subscriptions/{subscription_id}/", expect=(204,))


# ---------------------------------------------------------------------------- dry run


@dataclass
class RecordedRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: Any

    def describe(self) -> str:
        lines = [f"{self.method} {self.url}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        if self.body is not None:
            lines.append(json.dumps(self.body, indent=2, ensure_ascii=False))
        return "\n".join(lines)


def recording_transport(answer: Callable[[httpx.Request], dict]) -> tuple[httpx.MockTransport, list[RecordedRequest]]:
    """A transport that sends nothing: it keeps each request (the token redacted) and answers with
    `answer(request)`, so a dry run builds exactly the requests a real run would send."""
    recorded: list[RecordedRequest] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        headers = {"Authorization": REDACTED, "Content-Type": request.headers.get("content-type", "")}
        recorded.append(RecordedRequest(request.method, str(request.url), headers, body))
        status = 201 if request.url.path in ("/api/v1/studies/", "/api/v1/submissions/bonus-payments/") else 200
        return httpx.Response(status, json=answer(request))

    return httpx.MockTransport(handle), recorded
