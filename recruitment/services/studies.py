"""A study's Prolific side: the link (token kept here), the study it creates on Prolific (entry URL, places,
reward, time, completion codes and their actions), and publishing, pausing and stopping it."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from decimal import Decimal

from django.db import models, transaction
from django.db.backends.base.operations import BaseDatabaseOperations

from annotation.models import AuditEntry, CrowdSession, Project
from annotation.services import access, audit
from annotation.services.crowd import crowd
from annotation.services.crowd.crowd import study_setting
from annotation.services.crowd.pay import CURRENCY_SIGNS, PROLIFIC_MINIMUM_HOURLY, PROLIFIC_RECOMMENDED_HOURLY
from annotation.services.projects import update_project
from common.schema import SettingError
from recruitment import prescreening
from recruitment.models import KeepOut, ProlificLink
from recruitment.prolific import ProlificClient, ProlificError, recording_transport
from recruitment.secrets import SecretUnreadable

RETURN_REASON = "You stopped before the end of the study: please return it so that someone else can take your place."
# What each action does to the study on both sides: Prolific's transition, the link's state, our status.
ACTIONS = {
    "publish": ("PUBLISH", ProlificLink.State.ACTIVE, Project.Status.PUBLISHED),
    "pause": ("PAUSE", ProlificLink.State.PAUSED, Project.Status.PAUSED),
    "start": ("START", ProlificLink.State.ACTIVE, Project.Status.PUBLISHED),
    "stop": ("STOP", ProlificLink.State.STOPPED, Project.Status.CLOSED),
    # Closed here, paused there: Prolific's STOP cannot be undone, and a closed study can be reopened.
    "close": ("PAUSE", ProlificLink.State.PAUSED, Project.Status.CLOSED),
}
STUDY_FIELDS = (
    "name",
    "description",
    "places",
    "reward_cents",
    "currency",
    "estimated_minutes",
    "auto_approve",
    "screen_out_reward_cents",
    "screen_out_slots",
    "workspace_id",
    "minimum_approval_rate",
    "blocked_studies",
    *prescreening.FILTERS,
    "keep_out",  # this app's own rule for earlier waves' participants (recruitment.services.waves): never sent
)

PROLIFIC = AuditEntry.Action.PROLIFIC
SECRET_MAX = 1000  # far longer than any Prolific token or hook secret; the token goes into every request


class RecruitmentError(ValueError):
    """A request this study cannot make as it is; the message names the field or the state at fault."""


def link_of(project: Project) -> ProlificLink | None:
    return ProlificLink.objects.filter(project=project).first()


def save_link(project: Project, by, token: str = "", webhook_secret: str = "", **fields) -> ProlificLink:
    """Create or change the study's link. An empty token or secret keeps the one stored. The audit entry says
    which fields changed and that a secret was replaced, never its value."""
    unknown = set(fields) - set(STUDY_FIELDS)
    if unknown:
        raise RecruitmentError(f"unknown field(s): {', '.join(sorted(unknown))}")
    link = link_of(project) or ProlificLink(project=project, name=project.title)
    before = {name: getattr(link, name) for name in SENT_AFTER_CREATION}
    for name, value in fields.items():
        if link.prolific_study_id and name in FILTER_FIELDS and value != getattr(link, name):
            # Prolific keeps the filters a study was created with: changing them here would show a lie.
            raise RecruitmentError(f"{name}: the Prolific study was created with its filters; clone it to change them")
        setattr(link, name, value)
    for label, secret in (("token", token), ("webhook_secret", webhook_secret)):
        if len(secret) > SECRET_MAX:
            raise RecruitmentError(f"{label}: at most {SECRET_MAX} characters")
    if token:
        link.token = token.strip()
    if webhook_secret:
        link.webhook_secret = webhook_secret.strip()
    check_study_fields(link)
    if not link.webhook_secret_encrypted:
        _adopt_workspace_secret(link)
    changed = {name: getattr(link, name) for name, value in before.items() if getattr(link, name) != value}
    if link.prolific_study_id and changed:
        _send_changes(link, before, changed)
    link.save()
    replaced = [name for name, value in (("token", token), ("webhook_secret", webhook_secret)) if value]
    audit.record(by, PROLIFIC, project, operation="link", fields=sorted(fields), replaced=replaced)
    return link


# Who may take part: sent once, with the create call.
FILTER_FIELDS = ("minimum_approval_rate", "blocked_studies", *prescreening.FILTERS)
# What the Prolific study is told again when it changes here after creation (our field: Prolific's).
SENT_AFTER_CREATION = {
    "places": "total_available_places",
    "reward_cents": "reward",
    "estimated_minutes": "estimated_completion_time",
}


def _send_changes(link: ProlificLink, before: dict, changed: dict) -> None:
    """Update the Prolific study before saving here, so that a refusal leaves both sides as they were. Once it
    runs, only places may change, and only up (Prolific takes more places on a running study)."""
    if link.state not in (ProlificLink.State.DRAFT, ProlificLink.State.LINKED):
        if link.state == ProlificLink.State.STOPPED:
            raise RecruitmentError("the Prolific study is stopped: clone the study for a new wave")
        fixed = sorted(set(changed) - {"places"})
        if fixed:
            raise RecruitmentError(f"{fixed[0]}: the Prolific study is running; only places can be added now")
        if changed["places"] < before["places"]:
            raise RecruitmentError(
                f"places: the Prolific study is running; places can only go up (from {before['places']})"
            )
    payload = {SENT_AFTER_CREATION[name]: value for name, value in changed.items()}
    client = client_for(link)
    try:
        client.update_study(link.prolific_study_id, payload)
    except ProlificError as error:
        raise RecruitmentError(f"Prolific refused the change: {error}") from None
    finally:
        client.close()


def same_account_links(link: ProlificLink) -> list[ProlificLink]:
    """The other studies linked to the same Prolific workspace under the same API token (the same account):
    they share the workspace's hook secret. A study that only names the workspace (anyone can type its id)
    gets nothing of it."""
    if not link.workspace_id:
        return []
    try:
        token = link.token
    except SecretUnreadable:
        return []
    found = []
    for other in ProlificLink.objects.filter(workspace_id=link.workspace_id).exclude(pk=link.pk):
        try:
            if token and other.token == token:
                found.append(other)
        except SecretUnreadable:
            continue
    return found


def _adopt_workspace_secret(link: ProlificLink) -> None:
    """A study linked after its workspace was subscribed from here verifies the workspace's events too."""
    subscribed = [other for other in same_account_links(link) if other.hook_subscription_id]
    for other in subscribed:
        try:
            link.webhook_secret = other.webhook_secret
            return
        except SecretUnreadable:
            continue


# The columns' ranges on PostgreSQL (SQLite would store up to 2**63 and fail later, on Prolific's side or on
# moving the database): a value outside them is refused before anything is sent or saved.
INTEGER_RANGES = BaseDatabaseOperations.integer_field_ranges
# Prolific shows the description to participants; the model's TextField has no bound of its own.
DESCRIPTION_MAX = 10_000


def _check_bounds(link: ProlificLink) -> None:
    for name in STUDY_FIELDS:
        field = ProlificLink._meta.get_field(name)
        value = getattr(link, name)
        if isinstance(field, models.IntegerField):
            low, high = INTEGER_RANGES[field.get_internal_type()]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise RecruitmentError(f"{name}: a whole number from {low} to {high}")
        elif isinstance(field, models.CharField | models.TextField):
            limit = field.max_length or DESCRIPTION_MAX
            if not isinstance(value, str) or len(value) > limit:
                raise RecruitmentError(f"{name}: at most {limit} characters")


def check_study_fields(link: ProlificLink) -> None:
    """Every field the study is sent with, before anything is sent to Prolific or saved here."""
    _check_bounds(link)
    if not link.name.strip():
        raise RecruitmentError("name: the study needs a name participants see")
    if link.places < 1:
        raise RecruitmentError("places: at least one participant")
    if link.estimated_minutes < 1:
        raise RecruitmentError("estimated_minutes: at least one minute")
    if len(link.currency) != 3 or not link.currency.isalpha():
        raise RecruitmentError("currency: a three-letter code such as GBP or USD")
    if link.screen_out_reward_cents and link.screen_out_reward_cents >= link.reward_cents:
        raise RecruitmentError("screen_out_reward_cents: Prolific requires it below the study's reward")
    if link.screen_out_reward_cents and not link.screen_out_slots:
        raise RecruitmentError("screen_out_slots: how many participants may be screened out with a reward")
    if not 0 <= link.minimum_approval_rate <= 100:
        raise RecruitmentError("minimum_approval_rate: a percentage between 0 and 100")
    if not isinstance(link.blocked_studies, list) or not all(
        isinstance(study, str) and re.fullmatch(r"[0-9a-zA-Z]{1,64}", study) for study in link.blocked_studies
    ):
        raise RecruitmentError("blocked_studies: Prolific study ids (letters and digits), one a line")
    if link.keep_out not in KeepOut.values:
        raise RecruitmentError(f"keep_out: one of {', '.join(KeepOut.values)}")
    for field in prescreening.FILTERS:
        try:
            prescreening.check(field, getattr(link, field))
        except prescreening.PrescreeningError as error:
            raise RecruitmentError(str(error)) from None


def client_for(link: ProlificLink, transport=None) -> ProlificClient:
    """A client with the study's token; a token the server's key no longer opens asks for it again."""
    try:
        return ProlificClient(link.token, transport=transport)
    except SecretUnreadable as error:
        raise RecruitmentError(str(error)) from None


def entry_url(project: Project, site: str) -> str:
    """The study URL Prolific sends participants to, with Prolific's placeholders."""
    return crowd.entry_url(project, site, CrowdSession.Platform.PROLIFIC)


def _new_code() -> str:
    return secrets.token_hex(4).upper()


CODE_SETTINGS = {"completed_code": "completion_code", "returned_code": "returned_code"}


def ensure_codes(link: ProlificLink, by) -> None:
    """The study's codes are its own settings (what participants are shown), made here when empty: the
    completion code, the returned code, and with a screen-out reward the screened-out code (what a
    participant who fails the qualification gets). The link keeps the codes Prolific was sent."""
    names = dict(CODE_SETTINGS, **({"screened_out_code": "screened_out_code"} if link.screen_out_reward_cents else {}))
    codes = {setting: study_setting(link.project, setting) or _new_code() for setting in names.values()}
    if any(code != study_setting(link.project, setting) for setting, code in codes.items()):
        update_project(link.project, changed_by=by, **codes)
    for field, setting in names.items():
        setattr(link, field, codes[setting])


def prolific_study(project: Project, platform: str) -> crowd.PlatformStudy | None:
    """The study's Prolific study as created from here, with the codes it was created with (None when it is
    not on Prolific from here: then its STUDY_ID is not known, and the codes of its settings are the author's
    to register, and are shown)."""
    if platform != CrowdSession.Platform.PROLIFIC:
        return None
    link = ProlificLink.objects.filter(project=project).exclude(prolific_study_id="").first()
    if link is None:
        return None
    codes = frozenset(code for code in (link.completed_code, link.returned_code, link.screened_out_code) if code)
    return crowd.PlatformStudy(link.prolific_study_id, codes)


def completion_codes(link: ProlificLink) -> list[dict]:
    completed = {
        "code": link.completed_code,
        "code_type": "COMPLETED",
        "actions": [{"action": "AUTOMATICALLY_APPROVE" if link.auto_approve else "MANUALLY_REVIEW"}],
    }
    returned = {
        "code": link.returned_code,
        "code_type": "OTHER",
        "actions": [{"action": "REQUEST_RETURN", "return_reason": RETURN_REASON}],
    }
    codes = [completed, returned]
    if link.screen_out_reward_cents:
        screen_out = {
            "action": "FIXED_SCREEN_OUT_PAYMENT",
            "fixed_screen_out_reward": link.screen_out_reward_cents,
            "slots": link.screen_out_slots,
        }
        codes.append({"code": link.screened_out_code, "code_type": "FIXED_SCREENOUT", "actions": [screen_out]})
    return codes


def choice_filters(link: ProlificLink, client: ProlificClient) -> list[dict]:
    """The place and language filters chosen, as Prolific's choice ids (read from its filter list: the ids
    are Prolific's, the page takes names). A name Prolific does not offer is refused before anything is made."""
    chosen = {field: getattr(link, field) for field in prescreening.FILTERS if getattr(link, field)}
    if not chosen:
        return []
    offered = client.filter_choices([prescreening.FILTERS[field][0] for field in chosen])
    filters = []
    for field, names in chosen.items():
        filter_id = prescreening.FILTERS[field][0]
        choices = offered.get(filter_id, {})
        missing = [name for name in names if name not in choices]
        if missing:
            raise RecruitmentError(f"{field}: Prolific's filter {filter_id} offers no {', '.join(missing)}")
        filters.append({"filter_id": filter_id, "selected_values": [choices[name] for name in names]})
    return filters


def study_payload(link: ProlificLink, site: str, chosen_filters: Sequence[dict] = ()) -> dict:
    """The body of Prolific's create-study call (model.CreateStudy in the official client); `chosen_filters`
    are choice_filters' place and language filters."""
    payload = {
        "name": link.name,
        "internal_name": link.project.slug,
        "description": link.description or link.project.title,
        "external_study_url": entry_url(link.project, site),
        "prolific_id_option": "url_parameters",
        "completion_codes": completion_codes(link),
        "total_available_places": link.places,
        "estimated_completion_time": link.estimated_minutes,
        "reward": link.reward_cents,
        "device_compatibility": ["desktop", "tablet", "mobile"],
        "submissions_config": {"max_submissions_per_participant": 1},
    }
    filters = [
        {"filter_id": filter_id, "selected_values": list(groups)}
        for filter_id, groups in (
            ("participant_group_allowlist", link.allow_groups),
            ("participant_group_blocklist", link.block_groups),
        )
        if groups
    ]
    if link.minimum_approval_rate:
        filters.append(
            {"filter_id": "approval_rate", "selected_range": {"lower": link.minimum_approval_rate, "upper": 100}}
        )
    if link.blocked_studies:
        filters.append({"filter_id": "previous_studies_blocklist", "selected_values": list(link.blocked_studies)})
    filters.extend(chosen_filters)
    if filters:
        payload["filters"] = filters
    return payload


class LowPay(RecruitmentError):
    """The reward is below the hourly rate Prolific recommends: sent only when the author confirms it."""


def hourly_rate(link: ProlificLink) -> Decimal:
    return (Decimal(link.reward_cents) / 100 * 60 / Decimal(max(link.estimated_minutes, 1))).quantize(Decimal("0.01"))


def check_before_money(link: ProlificLink, confirm_low_pay: bool = False) -> None:
    """What must hold before Prolific is asked to take participants (create, publish, start): a study whose
    audience turns every Prolific arrival away, or a reward below Prolific's minimum hourly rate, is refused;
    one below the rate Prolific recommends needs `confirm_low_pay`."""
    project = link.project
    if CrowdSession.Platform.PROLIFIC not in access.admitted_platforms(project.audience):
        raise RecruitmentError(
            f"audience: this study takes no Prolific arrivals (audience {project.get_audience_display()}); "
            "every participant Prolific sends would be turned away. Set its audience to Prolific (or any "
            "platform) in its settings first."
        )
    if not link.reward_cents:
        raise RecruitmentError("reward_cents: set the reward before creating the study")
    if link.currency not in PROLIFIC_MINIMUM_HOURLY:
        return
    rate, sign = hourly_rate(link), CURRENCY_SIGNS[link.currency]
    minimum, recommended = PROLIFIC_MINIMUM_HOURLY[link.currency], PROLIFIC_RECOMMENDED_HOURLY[link.currency]
    pay = f"{link.reward_cents} for {link.estimated_minutes} minutes is {sign}{rate:.2f} an hour"
    if rate < minimum:
        raise RecruitmentError(
            f"reward_cents: {pay}, below Prolific's minimum of {sign}{minimum:.2f}: Prolific refuses it. "
            "Raise the reward or correct the estimated minutes."
        )
    if rate < recommended and not confirm_low_pay:
        raise LowPay(
            f"reward_cents: {pay}, below the {sign}{recommended:.2f} Prolific recommends. Tick "
            "'pay below the recommended rate' to go on anyway."
        )


def create_draft(
    link: ProlificLink, site: str, by, client: ProlificClient | None = None, confirm_low_pay: bool = False
) -> ProlificLink:
    """Create the study on Prolific as a draft (once: a linked study is changed on Prolific, not made twice)."""
    if link.prolific_study_id:
        raise RecruitmentError(f"this study is already on Prolific ({link.prolific_study_id})")
    check_study_fields(link)
    check_before_money(link, confirm_low_pay)
    client = client or client_for(link)
    chosen_filters = choice_filters(link, client)
    ensure_codes(link, by)
    study = client.create_study(study_payload(link, site, chosen_filters))
    link.prolific_study_id = study.id
    link.state = ProlificLink.State.DRAFT
    link.save()
    audit.record(by, PROLIFIC, link.project, operation="create", prolific_study=study.id, places=link.places)
    return link


def transition(
    link: ProlificLink, action: str, by, client: ProlificClient | None = None, confirm_low_pay: bool = False
) -> ProlificLink:
    """Publish, pause, start again, close (pause there) or stop the study on Prolific, and move our study
    the same way."""
    if action not in ACTIONS:
        raise RecruitmentError(f"unknown action {action!r} (one of {', '.join(ACTIONS)})")
    if not link.prolific_study_id:
        raise RecruitmentError("create the study on Prolific first")
    if action in ("publish", "start"):
        check_before_money(link, confirm_low_pay)
    prolific_action, state, status = ACTIONS[action]
    (client or client_for(link)).transition_study(link.prolific_study_id, prolific_action)
    with transaction.atomic():
        link.state = state
        link.save(update_fields=["state"])
        if link.project.status != status:
            update_project(link.project, changed_by=by, status=status)
    audit.record(by, PROLIFIC, link.project, operation=action, prolific_study=link.prolific_study_id)
    return link


# The link states a Prolific study can be stopped from (a draft was never published: there is nothing to end).
STOPPABLE = (ProlificLink.State.ACTIVE, ProlificLink.State.PAUSED)
# The Prolific action that brings the Prolific study to a status the study takes here, by the link's state.
FOLLOW = {
    (Project.Status.PUBLISHED, ProlificLink.State.DRAFT): "publish",
    (Project.Status.PUBLISHED, ProlificLink.State.PAUSED): "start",
    (Project.Status.PAUSED, ProlificLink.State.ACTIVE): "pause",
    (Project.Status.CLOSED, ProlificLink.State.ACTIVE): "close",
}


def follow_status(project: Project, status: str, by, for_good: bool = False) -> None:
    """The study's dashboard publishes, pauses, resumes or closes it: its Prolific study does the same first
    (a refusal, ours or Prolific's, leaves both as they were). Closing pauses the Prolific study, so that
    reopening starts it again; closing for good (the close page's box) or the Prolific page's Stop ends it for
    good, and reopening a study whose Prolific study was stopped is refused: Prolific cannot start it again
    (clone the study for a new wave)."""
    link = ProlificLink.objects.filter(project=project).exclude(prolific_study_id="").first()
    if link is None:
        return
    if link.state == ProlificLink.State.STOPPED and status == Project.Status.PUBLISHED:
        raise SettingError({"status": "its Prolific study was stopped and cannot start again: clone it for a new wave"})
    closing_for_good = for_good and status == Project.Status.CLOSED and link.state in STOPPABLE
    action = "stop" if closing_for_good else FOLLOW.get((status, link.state))
    if action is None:
        return
    try:
        transition(link, action, by)
    except (RecruitmentError, ProlificError) as error:
        raise SettingError({"status": f"Prolific: {error}"}) from None


def close_for_good(page) -> dict | None:
    """The close page's box to end the study's Prolific study for good, where it has one that can be ended."""
    links = ProlificLink.objects.filter(project=page["project"], state__in=STOPPABLE).exclude(prolific_study_id="")
    return {} if links.exists() else None


# Prolific's study statuses as the link's states (AWAITING REVIEW and COMPLETED: it takes no one any more).
PROLIFIC_STATES = {
    "UNPUBLISHED": ProlificLink.State.DRAFT,
    "PUBLISHING": ProlificLink.State.ACTIVE,
    "SCHEDULED": ProlificLink.State.ACTIVE,
    "ACTIVE": ProlificLink.State.ACTIVE,
    "PAUSED": ProlificLink.State.PAUSED,
    "AWAITING REVIEW": ProlificLink.State.STOPPED,
    "COMPLETED": ProlificLink.State.STOPPED,
}
# The study's statuses here that each link state goes with (the first when one must be chosen): a study
# closed here keeps its Prolific study paused.
STATE_STATUSES = {
    ProlificLink.State.ACTIVE: (Project.Status.PUBLISHED,),
    ProlificLink.State.PAUSED: (Project.Status.PAUSED, Project.Status.CLOSED),
    ProlificLink.State.STOPPED: (Project.Status.CLOSED,),
}


def drift(link: ProlificLink, client: ProlificClient | None = None) -> list[str]:
    """What differs between the two sides, as Prolific answers now: the state, places and reward sent, and
    the study's status here against its Prolific study's."""
    if not link.prolific_study_id:
        return []
    study = (client or client_for(link)).get_study(link.prolific_study_id)
    found = []
    there = PROLIFIC_STATES.get(study.status)
    if there is not None and there != link.state:
        found.append(f"state: Prolific says {study.status}, this page {link.get_state_display()}")
    if study.total_available_places != link.places:
        found.append(f"places: {study.total_available_places} on Prolific, {link.places} here")
    if round(study.reward) != link.reward_cents:
        found.append(f"reward: {round(study.reward)} on Prolific, {link.reward_cents} here")
    wanted = STATE_STATUSES.get(link.state, ())
    if wanted and link.project.status not in wanted:
        found.append(f"status: the study is {link.project.status} here, its Prolific study {link.get_state_display()}")
    return found


def fix_drift(link: ProlificLink, by, client: ProlificClient | None = None) -> list[str]:
    """Bring the sides together: places and reward as set here are sent again; the state follows Prolific
    when Prolific's study has ended, else the study's status here moves Prolific."""
    client = client or client_for(link)
    study = client.get_study(link.prolific_study_id)
    done = []
    there = PROLIFIC_STATES.get(study.status)
    if there == ProlificLink.State.STOPPED or (there is not None and link.state == ProlificLink.State.STOPPED):
        link.state = there
        link.save(update_fields=["state"])
        if link.project.status not in STATE_STATUSES[there]:
            update_project(link.project, changed_by=by, status=STATE_STATUSES[there][0])
        done.append(f"state taken from Prolific ({study.status})")
    else:
        if there is not None and there != link.state:
            link.state = there
            link.save(update_fields=["state"])
        action = FOLLOW.get((link.project.status, link.state))
        if action:
            transition(link, action, by, client=client, confirm_low_pay=True)
            done.append(f"Prolific: {action}")
    numbers = {}
    if study.total_available_places != link.places:
        numbers["total_available_places"] = link.places
    if round(study.reward) != link.reward_cents and there == ProlificLink.State.DRAFT:
        numbers["reward"] = link.reward_cents
    if numbers:
        client.update_study(link.prolific_study_id, numbers)
        done.append("sent " + ", ".join(f"{name} {value}" for name, value in numbers.items()))
    audit.record(by, PROLIFIC, link.project, operation="fix-drift", done=done)
    return done


def dry_run(link: ProlificLink, site: str) -> list:
    """The requests creating and publishing this study would send, sent nowhere and changing nothing here."""

    def answer(request) -> dict:
        if request.url.path.endswith("/filters/"):  # Prolific's choice ids are not asked for: names stand in
            choices = {filter_id: prescreening.CHOICES[field] for field, (filter_id, _) in prescreening.FILTERS.items()}
            return {
                "results": [
                    {"filter_id": key, "choices": {name: name for name in names}} for key, names in choices.items()
                ]
            }
        return {"id": "DRY-RUN-STUDY", "status": "UNPUBLISHED"}

    transport, recorded = recording_transport(answer)
    try:
        token = link.token
    except SecretUnreadable:
        token = ""  # a rehearsal sends nothing (its token is redacted): an unreadable one does not stop it
    client = ProlificClient(token or "dry-run", transport=transport)
    with transaction.atomic():
        try:
            link.prolific_study_id = ""  # rehearse the whole run, even for a study already on Prolific
            drafted = create_draft(link, site, None, client=client, confirm_low_pay=True)
            transition(drafted, "publish", None, client=client, confirm_low_pay=True)
        except ProlificError as error:
            raise RecruitmentError(str(error)) from None
        finally:
            transaction.set_rollback(True)  # a rehearsal: the codes it made and the audit entries go too
    link.refresh_from_db()
    link.project.refresh_from_db()
    return recorded
