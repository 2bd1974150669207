"""A stand-in for Prolific's API on 127.0.0.1, for tests and rehearsals. It takes exactly the paths and
payload shapes of Prolific's official client (github.com/prolific-oss/cli, client/*.go and model/*.go),
refuses anything else with Prolific's error shape ({"error": {"status", "title", "detail"}}), records
every call, and can hold a call (recorded or not) to stand for a timeout or a process killed mid-call.
Where Prolific's docs (docs.prolific.com, API reference) say more than the client, it refuses as they do: a
screen-out or a completion without one of the study's codes, bulk approve mixing its two forms, a participant
group with neither (or both) a workspace and an organisation.

Run alone (a rehearsal without Prolific):  python -m tests.recruitment.standin --port 8765 --token T
Its /_standin/ controls (see StandIn._rehearse) start submissions, move them and send signed webhook
deliveries, so that a whole study can be rehearsed from the browser (docs/crowd.md).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from tests.standin_server import LocalServer

# Fields of model.CreateStudy the client may send, and those Prolific requires.
STUDY_FIELDS = {
    "name",
    "internal_name",
    "description",
    "external_study_url",
    "prolific_id_option",
    "completion_code",
    "completion_option",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "maximum_allowed_time",
    "reward",
    "device_compatibility",
    "study_type",
    "peripheral_requirements",
    "study_labels",
    "submissions_config",
    "eligibility_requirements",
    "filters",
    "filter_set_id",
    "project",
}
STUDY_REQUIRED = {"name", "description", "prolific_id_option", "completion_codes", "total_available_places", "reward"}
CODE_TYPES = {
    "COMPLETED",
    "FAILED_ATTENTION_CHECK",
    "FOLLOW_UP_STUDY",
    "GIVE_BONUS",
    "INCOMPATIBLE_DEVICE",
    "NO_CONSENT",
    "OTHER",
    "FIXED_SCREENOUT",
}
CODE_ACTIONS = {
    "AUTOMATICALLY_APPROVE": set(),
    "MANUALLY_REVIEW": set(),
    "REQUEST_RETURN": {"return_reason"},
    "ADD_TO_PARTICIPANT_GROUP": {"participant_group"},
    "REMOVE_FROM_PARTICIPANT_GROUP": {"participant_group"},
    "DYNAMIC_PAYMENT": set(),
    "FIXED_SCREEN_OUT_PAYMENT": {"fixed_screen_out_reward", "slots"},
}
# "select" filters of GET /api/v1/filters/ (docs.prolific.com, Filters > List all filters): choice id -> name.
# The stand-in's own ids and a few names only; a study is created with the ids.
_LANGUAGES = {"0": "English", "1": "French", "2": "German", "3": "Spanish"}
SELECT_FILTERS = {
    "current-country-of-residence": {"0": "United Kingdom", "1": "United States", "2": "Canada", "3": "Ireland"},
    "first-language": _LANGUAGES,
    "fluent-languages": _LANGUAGES,
}
FILTER_IDS = {
    *SELECT_FILTERS,
    "participant_group_allowlist",
    "participant_group_blocklist",
    "previous_studies_blocklist",
    "approval_rate",
}
# Filters chosen by a range (docs.prolific.com, Studies > Create: selected_range {lower, upper}).
RANGE_FILTERS = {"approval_rate": (0, 100)}
SUBMISSION_ACTIONS = {"APPROVE", "COMPLETE", "REJECT", "RETURN", "SCREEN_OUT", "START", "UNREJECT", "UNRETURN"}
REJECTION_CATEGORIES = {
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
}
# GET /api/v1/hooks/event-types/ (docs.prolific.com, Webhooks: the events a workspace may subscribe to).
HOOK_EVENT_TYPES = {
    "study.status.change": "A study's status changed.",
    "study.progress.change": "A study's places filled or freed.",
    "study.has_high_return_rate": "Many participants returned the study.",
    "submission.status.change": "A submission's status changed.",
}
STUDY_TRANSITIONS = {"PUBLISH": "ACTIVE", "START": "ACTIVE", "PAUSE": "PAUSED", "STOP": "COMPLETED"}


class Refused(Exception):
    def __init__(self, status: int, detail):
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass
class Call:
    method: str
    path: str
    body: object
    authorization: str


@dataclass
class Hold:
    """Hold calls to a path: `record` says whether the call takes effect before it hangs."""

    path_pattern: str
    record: bool
    released: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)


class StandIn(LocalServer):
    def __init__(self, token: str = "stand-in-token"):
        self.token = token
        self.calls: list[Call] = []
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}  # submission id -> submission
        self.bonus_setups: dict[str, dict] = {}
        self.payments: list[str] = []  # bulk ids paid, one entry a payment
        self.groups: dict[str, dict] = {}
        self.hook_secrets: dict[str, dict] = {}  # workspace id -> its one secret (a new one replaces it)
        self.hooks: dict[str, dict] = {}  # subscription id -> subscription, with the secret that confirms it
        self.holds: list[Hold] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ running

    def stop(self) -> None:
        for hold in self.holds:
            hold.released.set()
        super().stop()

    def hold(self, path_pattern: str, record: bool) -> Hold:
        hold = Hold(path_pattern, record)
        self.holds.append(hold)
        return hold

    def release(self, hold: Hold) -> None:
        """Let held calls go (unanswered) and stop holding: the next call is served as usual."""
        self.holds.remove(hold)
        hold.released.set()

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    # ------------------------------------------------------------------ what tests set up and read

    def add_submission(self, study_id: str, participant_id: str, status: str = "ACTIVE", study_code: str = "") -> str:
        submission_id = self._new_id("sub")
        self.submissions[submission_id] = {
            "id": submission_id,
            "participant_id": participant_id,
            "study_id": study_id,
            "status": status,
            "study_code": study_code,
            "started_at": "2026-01-01T10:00:00Z",
            "completed_at": None,
            "is_complete": status not in ("ACTIVE", "RESERVED"),
            "time_taken": 600,
            "reward": self.studies.get(study_id, {}).get("reward", 0),
            "bonus_payments": [],
        }
        return submission_id

    def event_headers(self, workspace_id: str, body: bytes, event_id: str, sent: int | None = None) -> dict:
        """The headers Prolific sends an event with, signed with the workspace's current secret."""
        stamp = str(int(time.time()) if sent is None else sent)
        secret = self.hook_secrets[workspace_id]["value"].encode()
        signature = base64.b64encode(hmac.new(secret, stamp.encode() + body, hashlib.sha256).digest()).decode()
        return {
            "X-Prolific-Request-Signature": signature,
            "X-Prolific-Request-Timestamp": stamp,
            "X-Event-ID": event_id,
            "X-Timestamp": stamp,
        }

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        return [call for call in self.calls if call.method == method and re.fullmatch(pattern, call.path.split("?")[0])]

    # ------------------------------------------------------------------ serving

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        parts = urlsplit(handler.path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._answer(handler, 400, _error(400, "the body is not JSON"))
            return
        hold = next((h for h in self.holds if re.fullmatch(h.path_pattern, parts.path)), None)
        authorization = handler.headers.get("Authorization", "")
        with self._lock:
            self.calls.append(Call(handler.command, handler.path, body, authorization))
        if hold is not None and not hold.record:
            hold.reached.set()
            hold.released.wait(60)
            return  # never answered, never taken in: the call did not reach Prolific
        try:
            if parts.path.startswith("/_standin/"):  # the rehearsal's own controls: no Prolific token
                # Not under the lock: a delivery waits for the app, which may call this stand-in back.
                status, answer = self._rehearse(handler.command, parts.path, body)
                self._answer(handler, status, answer)
                return
            if authorization != f"Token {self.token}":
                raise Refused(401, "Authentication credentials were not provided or are wrong.")
            with self._lock:
                status, answer, *headers = self._route(handler.command, parts.path, parse_qs(parts.query), body)
        except Refused as refused:
            status, answer, headers = refused.status, _error(refused.status, refused.detail), []
        if hold is not None:
            hold.reached.set()
            hold.released.wait(60)
            return  # taken in, but the answer never comes
        self._answer(handler, status, answer, headers[0] if headers else {})

    def _answer(self, handler, status: int, answer, headers: dict | None = None) -> None:
        data = b"" if answer is None else json.dumps(answer).encode()
        try:
            handler.send_response(status)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the client went away

    def _route(self, method: str, path: str, query: dict, body):
        routes = [
            ("POST", r"/api/v1/studies/", self._create_study),
            ("GET", r"/api/v1/filters/", self._list_filters),
            ("GET", r"/api/v1/studies/(?P<study>\w+)", self._get_study),
            ("PATCH", r"/api/v1/studies/(?P<study>\w+)/", self._update_study),
            ("POST", r"/api/v1/studies/(?P<study>\w+)/transition/", self._transition_study),
            ("GET", r"/api/v1/studies/(?P<study>\w+)/submissions/", self._list_submissions),
            ("GET", r"/api/v1/submissions/(?P<submission>\w+)/", self._get_submission),
            ("POST", r"/api/v1/submissions/(?P<submission>\w+)/transition/", self._transition_submission),
            ("POST", r"/api/v1/submissions/(?P<submission>\w+)/request-return/", self._request_return),
            ("POST", r"/api/v1/submissions/bulk-approve/", self._bulk_approve),
            ("POST", r"/api/v1/submissions/bonus-payments/", self._set_up_bonuses),
            ("POST", r"/api/v1/bulk-bonus-payments/(?P<bulk>\w+)/pay/", self._pay_bonuses),
            ("POST", r"/api/v1/participant-groups/", self._create_group),
            ("GET", r"/api/v1/participant-groups/(?P<group>\w+)/participants/", self._group_members),
            ("POST", r"/api/v1/participant-groups/(?P<group>\w+)/participants/", self._add_members),
            ("DELETE", r"/api/v1/participant-groups/(?P<group>\w+)/participants/", self._remove_members),
            ("GET", r"/api/v1/hooks/event-types/", self._hook_event_types),
            ("POST", r"/api/v1/hooks/secrets/", self._create_hook_secret),
            ("POST", r"/api/v1/hooks/subscriptions/", self._create_hook),
            ("POST", r"/api/v1/hooks/subscriptions/(?P<hook>\w+)/", self._confirm_hook),
            ("DELETE", r"/api/v1/hooks/subscriptions/(?P<hook>\w+)/", self._delete_hook),
        ]
        for route_method, pattern, handler in routes:
            match = re.fullmatch(pattern, path)
            if match and route_method == method:
                return handler(body=body, query=query, **match.groupdict())
        raise Refused(404, f"{method} {path} is not an endpoint of this API")

    # ------------------------------------------------------------------ a rehearsal's controls (not Prolific's)

    def _rehearse(self, method: str, path: str, body):
        """POST /_standin/participants/ {"study_id", "participant_id"}: a participant starts the study (a
        submission, ACTIVE) and gets its entry URL with Prolific's placeholders filled in.
        POST /_standin/submissions/<id>/ {"status", "study_code"?}: Prolific's side of a submission moves.
        POST /_standin/deliveries/ {"submission_id", "target_url"?}: a signed submission.status.change
        delivery of its current status to every enabled subscription (or to target_url, any http address)."""
        if method != "POST":
            raise Refused(405, "the rehearsal controls take POST")
        if path == "/_standin/participants/":
            _expect_object(body, {"study_id", "participant_id"}, {"study_id", "participant_id"})
            study = self._study(body["study_id"])
            submission = self.add_submission(study["id"], str(body["participant_id"]))
            url = str(study.get("external_study_url", ""))
            for name, value in (
                ("PROLIFIC_PID", body["participant_id"]),
                ("STUDY_ID", study["id"]),
                ("SESSION_ID", submission),
            ):
                url = url.replace("{{%" + name + "%}}", str(value))
            return 201, {"submission_id": submission, "entry_url": url}
        match = re.fullmatch(r"/_standin/submissions/(?P<submission>\w+)/", path)
        if match:
            _expect_object(body, {"status", "study_code"}, {"status"})
            record = self._submission(match["submission"])
            record["status"] = body["status"]
            record["study_code"] = body.get("study_code", record["study_code"])
            if body["status"] not in ("ACTIVE", "RESERVED"):
                record["is_complete"], record["completed_at"] = True, "2026-01-01T10:10:00Z"
            return 200, record
        if path == "/_standin/deliveries/":
            _expect_object(body, {"submission_id", "target_url", "event_id"}, {"submission_id"})
            return 200, {
                "deliveries": self.deliver(body["submission_id"], body.get("target_url"), body.get("event_id"))
            }
        raise Refused(404, f"POST {path} is not a rehearsal control")

    def deliver(self, submission_id: str, target_url: str | None = None, event_id: str | None = None) -> list:
        """Send the submission's status as Prolific would, signed with each subscription's workspace secret."""
        record = self._submission(submission_id)
        body = json.dumps(
            {
                "resource_id": submission_id,
                "event_type": "submission.status.change",
                "participant_id": record["participant_id"],
                "status": record["status"],
            }
        ).encode()
        hooks = [
            hook
            for hook in self.hooks.values()
            if hook["is_enabled"] and hook["event_type"] == "submission.status.change"
        ]
        sent = []
        for hook in hooks:
            headers = {
                **self.event_headers(hook["workspace_id"], body, event_id or self._new_id("event")),
                "Content-Type": "application/json",
            }
            request = urllib.request.Request(
                target_url or hook["target_url"], data=body, headers=headers, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    sent.append({"target_url": request.full_url, "status": response.status})
            except urllib.error.HTTPError as error:
                sent.append({"target_url": request.full_url, "status": error.code})
            except OSError as error:
                sent.append({"target_url": request.full_url, "error": type(error).__name__})
        return sent

    # ------------------------------------------------------------------ endpoints

    def _study(self, study: str) -> dict:
        if study not in self.studies:
            raise Refused(404, f"no study {study}")
        return self.studies[study]

    def _submission(self, submission: str) -> dict:
        if submission not in self.submissions:
            raise Refused(404, f"no submission {submission}")
        return self.submissions[submission]

    def _create_study(self, body, query):
        _expect_object(body, STUDY_FIELDS, STUDY_REQUIRED)
        if "{{%PROLIFIC_PID%}}" not in str(body.get("external_study_url", "")):
            raise Refused(400, {"external_study_url": ["must pass {{%PROLIFIC_PID%}} with url_parameters"]})
        if not isinstance(body["reward"], int | float) or body["reward"] < 0:
            raise Refused(400, {"reward": ["a number of cents or pence"]})
        for code in body["completion_codes"]:
            _expect_object(code, {"code", "code_type", "actions", "actor"}, {"code", "code_type", "actions"})
            if code["code_type"] not in CODE_TYPES:
                raise Refused(400, {"completion_codes": [f"unknown code_type {code['code_type']}"]})
            for action in code["actions"]:
                name = action.get("action")
                if name not in CODE_ACTIONS:
                    raise Refused(400, {"completion_codes": [f"unknown action {name}"]})
                _expect_object(action, {"action", *CODE_ACTIONS[name]}, {"action", *CODE_ACTIONS[name]})
                if name == "FIXED_SCREEN_OUT_PAYMENT" and action["fixed_screen_out_reward"] >= body["reward"]:
                    raise Refused(400, {"completion_codes": ["the screen-out reward must be below the reward"]})
        for study_filter in body.get("filters", []):
            _expect_object(
                study_filter, {"filter_id", "selected_values", "selected_range", "weightings"}, {"filter_id"}
            )
            if study_filter["filter_id"] not in FILTER_IDS:
                raise Refused(400, {"filters": [f"unknown filter {study_filter['filter_id']}"]})
            if study_filter["filter_id"] in RANGE_FILTERS:
                low, high = RANGE_FILTERS[study_filter["filter_id"]]
                chosen = study_filter.get("selected_range") or {}
                if set(chosen) != {"lower", "upper"} or not low <= chosen["lower"] <= chosen["upper"] <= high:
                    raise Refused(
                        400, {"filters": [f"{study_filter['filter_id']}: selected_range lower..upper in {low}..{high}"]}
                    )
            chosen = study_filter.get("selected_values", [])
            if "selected_values" in study_filter and (
                not isinstance(chosen, list) or not chosen or not all(isinstance(value, str) for value in chosen)
            ):
                raise Refused(400, {"filters": [f"{study_filter['filter_id']}: selected_values, a list of ids"]})
            if study_filter["filter_id"] in SELECT_FILTERS:
                unknown = set(chosen) - set(SELECT_FILTERS[study_filter["filter_id"]])
                if unknown or "selected_values" not in study_filter:
                    raise Refused(400, {"filters": [f"{study_filter['filter_id']}: no choice {sorted(unknown)}"]})
            unknown = set(chosen) - set(self.groups)
            if study_filter["filter_id"].startswith("participant_group") and unknown:
                raise Refused(400, {"filters": [f"no participant group {sorted(unknown)}"]})
        study_id = self._new_id("study")
        self.studies[study_id] = {**body, "id": study_id, "status": "UNPUBLISHED", "places_taken": 0}
        return 201, self.studies[study_id]

    def _list_filters(self, body, query):
        listed = [
            {"filter_id": filter_id, "type": "select", "data_type": "ChoiceID", "choices": choices}
            for filter_id, choices in SELECT_FILTERS.items()
        ]
        listed.append({"filter_id": "approval_rate", "type": "range", "data_type": "integer"})
        return 200, {"results": listed}

    def _get_study(self, body, query, study):
        return 200, self._study(study)

    def _update_study(self, body, query, study):
        _expect_object(body, STUDY_FIELDS, set())
        record = self._study(study)
        if record["status"] != "UNPUBLISHED":  # model.UpdateStudy: a running study takes more places only
            if set(body) - {"total_available_places"}:
                raise Refused(400, "a published study can change its total_available_places only")
            if body.get("total_available_places", 0) < record["total_available_places"]:
                raise Refused(400, {"total_available_places": ["can only increase once published"]})
        self._study(study).update(body)
        return 200, self._study(study)

    def _transition_study(self, body, query, study):
        _expect_object(body, {"action"}, {"action"})
        if body["action"] not in STUDY_TRANSITIONS:
            raise Refused(400, {"action": [f"unknown action {body['action']}"]})
        record = self._study(study)
        if body["action"] == "PUBLISH" and record["status"] != "UNPUBLISHED":
            raise Refused(400, "only an unpublished study can be published")
        record["status"] = STUDY_TRANSITIONS[body["action"]]
        return 200, record

    def _list_submissions(self, body, query, study):
        self._study(study)
        limit, offset = int(query.get("limit", ["20"])[0]), int(query.get("offset", ["0"])[0])
        rows = [row for row in self.submissions.values() if row["study_id"] == study]
        page = rows[offset : offset + limit]
        more = offset + limit < len(rows)
        next_href = f"/api/v1/studies/{study}/submissions/?limit={limit}&offset={offset + limit}" if more else None
        return 200, {"results": page, "_links": {"next": {"href": next_href}}, "meta": {"count": len(rows)}}

    def _get_submission(self, body, query, submission):
        return 200, self._submission(submission)

    def _transition_submission(self, body, query, submission):
        _expect_object(
            body, {"action", "message", "rejection_category", "completion_code", "completion_code_data"}, {"action"}
        )
        action = body["action"]
        if action not in SUBMISSION_ACTIONS:
            raise Refused(400, {"action": [f"unknown action {action}"]})
        record = self._submission(submission)
        if action == "REJECT":
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                raise Refused(400, {"rejection_category": ["required, one of Prolific's categories"]})
            if len(body.get("message", "")) < 100:
                raise Refused(400, {"message": ["at least 100 characters"]})
            if record["status"] != "AWAITING REVIEW":
                raise Refused(400, "only a submission awaiting review can be rejected")
        if action in ("SCREEN_OUT", "COMPLETE"):
            wanted = {"SCREEN_OUT": "FIXED_SCREENOUT"}.get(action)
            codes = self._study(record["study_id"]).get("completion_codes", [])
            known = {code["code"] for code in codes if wanted is None or code["code_type"] == wanted}
            if body.get("completion_code") not in known:
                raise Refused(400, {"completion_code": [f"required for {action}: one of the study's codes"]})
        if action == "SCREEN_OUT" and record["status"] not in ("ACTIVE", "AWAITING REVIEW"):
            raise Refused(400, "this submission cannot be screened out now")
        record["status"] = {"APPROVE": "APPROVED", "REJECT": "REJECTED", "RETURN": "RETURNED"}.get(
            action, "SCREENED OUT" if action == "SCREEN_OUT" else record["status"]
        )
        answer = {k: record[k] for k in ("id", "status", "started_at", "completed_at", "study_id")}
        return 200, {**answer, "participant": record["participant_id"], "entered_code": record["study_code"]}

    def _request_return(self, body, query, submission):
        _expect_object(body, {"request_return_reasons"}, {"request_return_reasons"})
        record = self._submission(submission)
        record["return_requested"] = "2026-01-01T12:00:00Z"
        return 200, {"id": submission, "status": record["status"], "participant": record["participant_id"]}

    def _bulk_approve(self, body, query):
        _expect_object(body, {"submission_ids", "study_id", "participant_ids"}, set())
        # Two forms (cmd/submission/bulk_approve.go, docs.prolific.com Submissions > Bulk approve):
        # submission_ids alone, or study_id with participant_ids. A mix is refused.
        if body.get("submission_ids") and (body.get("study_id") or body.get("participant_ids")):
            raise Refused(400, "give submission_ids, or study_id with participant_ids, not both")
        if body.get("participant_ids") and not body.get("study_id"):
            raise Refused(400, {"study_id": ["required with participant_ids"]})
        if not body.get("submission_ids") and not body.get("participant_ids"):
            raise Refused(400, "give submission_ids, or study_id with participant_ids")
        ids = body.get("submission_ids") or [
            key
            for key, row in self.submissions.items()
            if row["study_id"] == body["study_id"] and row["participant_id"] in body["participant_ids"]
        ]
        for submission in ids:
            if self._submission(submission)["status"] != "AWAITING REVIEW":
                raise Refused(400, f"submission {submission} is not awaiting review")
        for submission in ids:
            self.submissions[submission]["status"] = "APPROVED"
        return 202, None  # taken, done in the background

    def _set_up_bonuses(self, body, query):
        _expect_object(body, {"study_id", "csv_bonuses"}, {"study_id", "csv_bonuses"})
        study = self._study(body["study_id"])
        lines = []
        for number, line in enumerate(body["csv_bonuses"].splitlines(), start=1):
            participant, _, amount = line.partition(",")
            if not re.fullmatch(r"\d+(\.\d{1,2})?", amount.strip()):
                raise Refused(400, {"csv_bonuses": [f"line {number}: the amount {amount!r} is not a number"]})
            known = any(
                row["participant_id"] == participant and row["study_id"] == study["id"]
                for row in self.submissions.values()
            )
            if not known:
                raise Refused(400, {"csv_bonuses": [f"line {number}: {participant} has no submission in the study"]})
            lines.append((participant, round(float(amount) * 100)))
        bulk = self._new_id("bulk")
        total = sum(cents for _, cents in lines)
        self.bonus_setups[bulk] = {"study": study["id"], "lines": lines}
        return 201, {"id": bulk, "study": study["id"], "amount": total, "fees": 0, "vat": 0, "total_amount": total}

    def _pay_bonuses(self, body, query, bulk):
        if bulk not in self.bonus_setups:
            raise Refused(404, f"no bonus set-up {bulk}")
        self.payments.append(bulk)
        setup = self.bonus_setups[bulk]
        for participant, cents in setup["lines"]:
            for row in self.submissions.values():
                if row["participant_id"] == participant and row["study_id"] == setup["study"]:
                    row["bonus_payments"].append(cents)
        return 202, None

    def _create_group(self, body, query):
        _expect_object(body, {"name", "workspace_id", "organisation_id", "description", "participant_ids"}, {"name"})
        if bool(body.get("workspace_id")) == bool(body.get("organisation_id")):
            raise Refused(400, "either a workspace_id or an organisation_id must be given (one of them)")
        group = self._new_id("group")
        members = list(dict.fromkeys(body.get("participant_ids", [])))
        self.groups[group] = {"id": group, "name": body["name"], "members": members}
        return 200, {"id": group, "name": body["name"], "participant_count": len(members)}

    def _group(self, group: str) -> dict:
        if group not in self.groups:
            raise Refused(404, f"no participant group {group}")
        return self.groups[group]

    def _group_members(self, body, query, group):
        members = self._group(group)["members"]
        return 200, {"results": [{"participant_id": p, "datetime_created": "2026-01-01T00:00:00Z"} for p in members]}

    def _add_members(self, body, query, group):
        _expect_object(body, {"participant_ids"}, {"participant_ids"})
        record = self._group(group)
        record["members"] = list(dict.fromkeys(record["members"] + body["participant_ids"]))
        return self._group_members(None, query, group)

    def _remove_members(self, body, query, group):
        _expect_object(body, {"participant_ids"}, {"participant_ids"})
        record = self._group(group)
        record["members"] = [p for p in record["members"] if p not in body["participant_ids"]]
        return self._group_members(None, query, group)

    def _hook_event_types(self, body, query):
        return 200, {"results": [{"event_type": name, "description": text} for name, text in HOOK_EVENT_TYPES.items()]}

    def _create_hook_secret(self, body, query):
        _expect_object(body, {"workspace_id"}, {"workspace_id"})
        if not body["workspace_id"]:
            raise Refused(400, {"workspace_id": ["This field may not be blank."]})
        secret = {
            "id": self._new_id("secret"),
            "value": secrets.token_urlsafe(32),
            "workspace_id": body["workspace_id"],
        }
        self.hook_secrets[body["workspace_id"]] = secret
        return 201, secret

    def _create_hook(self, body, query):
        _expect_object(body, {"event_type", "target_url", "workspace_id"}, {"event_type", "target_url", "workspace_id"})
        if body["event_type"] not in HOOK_EVENT_TYPES:
            raise Refused(400, {"event_type": [f"unknown event type {body['event_type']}"]})
        if not str(body["target_url"]).startswith("https://"):
            raise Refused(400, {"target_url": ["must use https://"]})
        if body["workspace_id"] not in self.hook_secrets:
            raise Refused(400, "create a secret for the workspace before subscribing")
        hook = {**body, "id": self._new_id("hook"), "is_enabled": False}
        self.hooks[hook["id"]] = {**hook, "confirm": secrets.token_hex(16)}
        return 201, hook, {"X-Hook-Secret": self.hooks[hook["id"]]["confirm"]}

    def _hook(self, hook: str) -> dict:
        if hook not in self.hooks:
            raise Refused(404, f"no subscription {hook}")
        return self.hooks[hook]

    def _confirm_hook(self, body, query, hook):
        _expect_object(body, {"secret"}, {"secret"})
        record = self._hook(hook)
        if body["secret"] != record["confirm"]:
            raise Refused(400, {"secret": ["does not confirm this subscription"]})
        record["is_enabled"] = True
        return 200, {key: value for key, value in record.items() if key != "confirm"}

    def _delete_hook(self, body, query, hook):
        if body is not None:
            raise Refused(400, "the body must be empty")
        self._hook(hook)
        del self.hooks[hook]
        return 204, None


def _error(status: int, detail) -> dict:
    titles = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
    return {
        "error": {"status": status, "title": titles.get(status, "Error"), "error_code": status * 1000, "detail": detail}
    }


def _expect_object(body, allowed: set, required: set) -> None:
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    unknown, missing = set(body) - allowed, required - set(body)
    if unknown:
        raise Refused(400, {name: ["unknown field"] for name in sorted(unknown)})
    if missing:
        raise Refused(400, {name: ["This field is required."] for name in sorted(missing)})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token", default="stand-in-token")
    options = parser.parse_args()
    server = StandIn(options.token).start(options.port)
    print(f"Prolific stand-in at {server.url} (token {options.token!r})", flush=True)
    threading.Event().wait()
