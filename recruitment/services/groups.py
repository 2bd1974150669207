"""Waves: a Prolific participant group made from a study's participants who met a rule (gold accuracy at
least x), kept in step with Prolific, then allowed into or kept out of the next study."""

from __future__ import annotations

from annotation.models import AuditEntry, Project
from annotation.services import audit
from recruitment.models import ParticipantGroup, ProlificLink
from recruitment.prolific import ProlificClient
from recruitment.services import settle
from recruitment.services.studies import RecruitmentError, client_for

PROLIFIC = AuditEntry.Action.PROLIFIC


def members_by_gold(link: ProlificLink, minimum_accuracy: float) -> list[str]:
    if not 0 <= minimum_accuracy <= 1:
        raise RecruitmentError("minimum accuracy: between 0 and 1")
    aside = settle.set_aside(link)  # rejected, returned or asked to: not a good worker for the next wave
    return sorted(
        {
            row.participant_id
            for row in settle.table(link)
            if row.arrived is not None
            and row.participant_id not in aside
            and row.gold_accuracy is not None
            and row.gold_accuracy >= minimum_accuracy
        }
    )


def build_group(
    link: ProlificLink, name: str, minimum_accuracy: float, by, client: ProlificClient | None = None
) -> ParticipantGroup:
    """Create the group on Prolific, or bring an existing one of that name up to date (members added and
    removed so that it holds exactly those who meet the rule now)."""
    name = name.strip()
    if not name:
        raise RecruitmentError("name: the group needs a name")
    limit = ParticipantGroup._meta.get_field("name").max_length
    if len(name) > limit:  # refused before Prolific makes a group this app could not keep
        raise RecruitmentError(f"name: at most {limit} characters")
    if not link.workspace_id:
        raise RecruitmentError("workspace_id: Prolific keeps a participant group in a workspace; enter its id first")
    members = members_by_gold(link, minimum_accuracy)
    client = client or client_for(link)
    group = ParticipantGroup.objects.filter(project=link.project, name=name).first()
    rule = f"gold accuracy >= {minimum_accuracy:g}"
    if group is None or not group.prolific_group_id:
        made = client.create_group(name, link.workspace_id, members, description=f"{link.project.slug}: {rule}")
        group = group or ParticipantGroup(project=link.project, name=name)
        group.prolific_group_id = made.id
    else:
        there = set(client.group_members(group.prolific_group_id))
        if set(members) - there:
            client.add_group_members(group.prolific_group_id, sorted(set(members) - there))
        if there - set(members):
            client.remove_group_members(group.prolific_group_id, sorted(there - set(members)))
    group.rule, group.participant_ids = rule, members
    group.save()
    audit.record(by, PROLIFIC, link.project, operation="group", group=name, rule=rule, members=len(members))
    return group


def use_group(next_study: ProlificLink, group: ParticipantGroup, mode: str, by) -> ProlificLink:
    """Allow (only this group may take part) or block the group in a study not yet on Prolific."""
    if mode not in ("allow", "block"):
        raise RecruitmentError("mode: allow or block")
    if next_study.prolific_study_id:
        raise RecruitmentError("the next study is already on Prolific: set its filters there")
    allow, block = set(next_study.allow_groups), set(next_study.block_groups)
    (allow if mode == "allow" else block).add(group.prolific_group_id)
    (block if mode == "allow" else allow).discard(group.prolific_group_id)
    next_study.allow_groups, next_study.block_groups = sorted(allow), sorted(block)
    next_study.save(update_fields=["allow_groups", "block_groups"])
    audit.record(by, PROLIFIC, next_study.project, operation="filter", group=group.name, mode=mode)
    return next_study


def groups_for(project: Project):
    """Groups an author can use in this study: those built from any study they manage."""
    return ParticipantGroup.objects.filter(project__owner=project.owner).exclude(prolific_group_id="")
