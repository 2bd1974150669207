"""Projects: creation, changes and lifecycle, members, clones. The web form, the API serializer and the
`create_project` command all come from the settings schema (services.study_settings) and call these functions."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.db.models import Q

from annotation.models import Annotation, AuditEntry, Project
from annotation.services import access, audit, instrument
from annotation.services.redundancy import retarget_open_items
from annotation.services.study_settings import GUIDANCE, WAVE_CODES, current_setting, settings_schema
from annotation.tasktypes import get_task_type
from common.schema import Schema, Setting, SettingError


def _apply(project: Project, schema: Schema, cleaned: dict) -> None:
    options = dict(project.options)
    links = {}
    for name, value in cleaned.items():
        setting = schema.get(name)
        if setting.kind == "project":
            links[name] = value
        elif setting.column:
            setattr(project, name, value)
        else:
            options[name] = value
    project.options = options
    for name, slug in links.items():  # once the other settings are in place: the link must fit them
        setattr(project, name, _linked_project(project, name, slug))


def _linked_project(project: Project, name: str, slug: str | None) -> Project | None:
    if slug is None:
        return None
    linked = Project.objects.filter(slug=slug).first()
    refusal = link_refusal(project, linked) if linked is not None else None
    if linked is None or refusal is not None:
        raise SettingError({name: refusal or f"{slug!r} names no project you manage"})
    return linked


def link_refusal(project: Project, linked: Project) -> str | None:
    """Why `linked` cannot validate the answers of `project`, or None when it can: it must be another
    project its owner manages, of the task type and labels its task type's answers are validated with."""
    setup = project.task.validation_task(project.options)
    if setup is None:
        return f"a {project.task.label} project sends nothing to validation"
    if linked.slug == project.slug or not access.can_manage(project.owner, linked):
        return f"{linked.slug!r} names no project you manage"
    wanted = get_task_type(setup.task_type)
    if linked.task_type != wanted.name or linked.task.categories(linked.options) != wanted.categories(setup.options):
        return f"{linked.slug!r} is not a {wanted.label} project with the labels these answers are validated with"
    return None


def validators_per_pair(project: Project) -> int | None:
    """How many validators each of the project's written pairs gets in its validation project: where the
    task type says so, every other writer of the item (capped by its setting), else the task type's fixed
    number; None for a project that sends nothing to validation."""
    setup = project.task.validation_task(project.options)
    if setup is None:
        return None
    following = project.task.validators_per_pair(project.options, project.redundancy)
    return setup.redundancy if following is None else following


def writers_needed(project: Project) -> int:
    """The fewest writers per item round 2 needs: one to write a pair and at least one other to judge it,
    where validators follow from the writers; 1 otherwise."""
    return 2 if project.task.validators_per_pair(project.options, project.redundancy) is not None else 1


def round_two_refusal(project: Project) -> str | None:
    """Why the project's pairs cannot go to a validation round (too few writers per item), or None."""
    validators = validators_per_pair(project)
    if validators is None or validators >= 1:
        return None
    return (
        f"round 2 needs at least {writers_needed(project)} writers per item (each explanation is judged by the "
        f"item's other writers) and this study gives each item {project.redundancy}: raise its redundancy first"
    )


def follow_writers(project: Project, changed_by=None) -> None:
    """Keep the linked validation project's validators per pair what the project's writers give (its
    redundancy set, its open items re-targeted); nothing where the number does not follow the writers."""
    linked = project.validation_project
    if linked is None or project.task.validators_per_pair(project.options, project.redundancy) is None:
        return
    validators = validators_per_pair(project)
    if validators is not None and validators >= 1 and linked.redundancy != validators:
        update_project(linked, changed_by=changed_by, redundancy=validators, max_annotations=validators)


def _check_together(project: Project) -> None:
    if project.max_annotations < project.redundancy:
        raise SettingError({"max_annotations": f"must be at least the redundancy ({project.redundancy})"})
    errors = project.task.check_settings(project.options)
    if errors:
        raise SettingError(errors)


def create_project(slug: str, task_type: str, owner, **settings) -> Project:
    """A new project owned by `owner` (an author or admin), its settings checked against the task type's
    schema. Raises SettingError (field -> message), PermissionDenied for a non-author owner, ValueError
    for an unknown task type or a slug in use."""
    access.ensure_can_create_project(owner)
    try:
        validate_slug(slug)
    except ValidationError:
        raise SettingError({"slug": "use letters, digits, hyphens and underscores only"}) from None
    if len(slug) > Project._meta.get_field("slug").max_length:
        raise SettingError({"slug": f"must be at most {Project._meta.get_field('slug').max_length} characters"})
    task = get_task_type(task_type)
    schema = settings_schema(task)
    given = {name: value for name, value in settings.items() if value is not None}
    cleaned = schema.clean(given)
    if "max_annotations" not in given:
        cleaned["max_annotations"] = max(cleaned["max_annotations"], cleaned["redundancy"])
    if not cleaned["title"]:
        cleaned["title"] = slug.replace("-", " ").capitalize()
    project = Project(slug=slug, task_type=task_type, owner=owner, options={})
    _apply(project, schema, cleaned)
    _check_together(project)
    if Project.objects.filter(slug=slug).exists():
        raise SettingError({"slug": f"a project with the slug {slug!r} exists already"})
    with transaction.atomic():
        project.save()
        instrument.record(project)
    return project


def has_answers(project: Project) -> bool:
    return Annotation.objects.filter(item__project=project).exists()


def update_project(project: Project, changed_by=None, **changes) -> Project:
    """Change some settings. Settings that would change what collected answers mean (the task type, the
    labels) are refused once the project has answers. The change is written to the audit log (changed_by:
    the user, None for the command line)."""
    schema = settings_schema(project.task)
    # The task type, and the settings that declare they give answers their meaning.
    meaning = ["task_type", *(setting.name for setting in schema if setting.fixed_once_answered)]
    fixed = [name for name in meaning if name in changes and changes[name] != current_setting(project, schema, name)]
    if fixed and has_answers(project):
        raise SettingError(
            {
                fixed[0]: "cannot change once the project has answers: they were given on the old "
                "scale (clone the study to change it)"
            }
        )
    if "task_type" in changes:
        task_type = get_task_type(changes.pop("task_type")).name
        if task_type != project.task_type:  # the old type's guidance is not the new one's: its own applies
            project.options = {name: value for name, value in project.options.items() if name != GUIDANCE}
        project.task_type = task_type
        schema = settings_schema(project.task)
    if "status" in changes:
        changes["status"] = _checked_status(project, changes["status"])
    cleaned = schema.clean(changes, partial=True)
    before = {name: _loggable(current_setting(project, schema, name)) for name in cleaned if name in schema}
    _apply(project, schema, cleaned)
    _check_together(project)
    after = {name: _loggable(current_setting(project, schema, name)) for name in before}
    changed = {name: {"before": before[name], "after": after[name]} for name in before if before[name] != after[name]}
    with transaction.atomic():
        project.save()
        instrument.record(project)
        if changed:
            audit.record(changed_by, AuditEntry.Action.SETTINGS, project, changes=changed)
        if "redundancy" in changed:
            retarget_open_items(project)
        if changed:  # a change of the writers (or of the link) may change the validators per pair
            follow_writers(project, changed_by)
    return project


def _loggable(value):
    """A setting as the audit log stores it: a linked project by its slug."""
    return value.slug if isinstance(value, Project) else value


# Lifecycle: draft -> published <-> paused -> closed, and closed studies may reopen.
TRANSITIONS = {
    Project.Status.DRAFT: {Project.Status.PUBLISHED, Project.Status.CLOSED},
    Project.Status.PUBLISHED: {Project.Status.PAUSED, Project.Status.CLOSED},
    Project.Status.PAUSED: {Project.Status.PUBLISHED, Project.Status.CLOSED},
    Project.Status.CLOSED: {Project.Status.PUBLISHED},
}


def _checked_status(project: Project, status) -> str:
    status = schema_status(status)
    if status == project.status:
        return status
    if status == Project.Status.DRAFT and not has_answers(project):
        return status  # back to a draft while nothing was collected
    if status not in TRANSITIONS[project.status]:
        raise SettingError({"status": f"a {project.status} study cannot become {status}"})
    # Workers would find nothing to do: a study goes out with data to answer, or as the validation study a
    # writing study sends its pairs to as they are written.
    if (
        status == Project.Status.PUBLISHED
        and not project.items.filter(is_gold=False).exists()
        and not project.validates.exists()
    ):
        raise SettingError({"status": "a study with no items cannot be published: import its data first"})
    return status


def schema_status(value) -> str:
    return Setting("status", "choice", None, choices=tuple(Project.Status.choices)).clean(value)


# Platforms that run the study too (the recruitment app adds Prolific's at start-up: annotation never imports
# it). Each is told of a lifecycle change from the dashboard before it is made here, and raises SettingError
# to refuse it, so that both sides stay in one state. (project, status, changed_by, for_good)
_status_followers: list[Callable[[Project, str, object, bool], None]] = []


def register_status_follower(follower: Callable[[Project, str, object, bool], None]) -> None:
    if follower not in _status_followers:
        _status_followers.append(follower)


def set_status(project: Project, status: str, changed_by=None, for_good: bool = False) -> Project:
    """Publish, pause, resume, close or reopen the study, and its study on each platform it runs on.
    for_good: closing, end it on the platforms too, where it then cannot be reopened (else it is paused there)."""
    status = _checked_status(project, status)
    for follower in _status_followers:
        follower(project, status, changed_by, for_good)
    project.refresh_from_db()
    return update_project(project, changed_by=changed_by, status=status)


# What a feature makes for a clone of a study, inside the clone's transaction: (the study, its clone).
_clone_steps: list[Callable[[Project, Project], None]] = []


def register_clone_step(step: Callable[[Project, Project], None]) -> None:
    if step not in _clone_steps:
        _clone_steps.append(step)


def clone_project(project: Project, slug: str, owner, with_items: bool = False) -> Project:
    """A new draft study with the same settings (and, with_items, the same examples, atoms and items, as
    fresh items: no answers, imported votes or adjudications are copied)."""
    from annotation.models import Atom, Example, Item

    schema = settings_schema(project.task)
    settings = {setting.name: current_setting(project, schema, setting.name) for setting in schema}
    settings.update(status=Project.Status.DRAFT, title=f"{project.title} (copy)")
    settings.update(dict.fromkeys(WAVE_CODES, ""))  # a new wave gets codes of its own
    with transaction.atomic():
        clone = create_project(slug, project.task_type, owner, **settings)
        clone.qualification_id = project.qualification_id
        kept = {name: value for name, value in project.options.items() if name not in WAVE_CODES}
        clone.options = {**kept, **clone.options}
        clone.save(update_fields=["qualification", "options"])
        for step in _clone_steps:
            step(project, clone)
        if with_items:
            examples = list(project.examples.order_by("id"))
            copies = Example.objects.bulk_create(
                [Example.from_source(e, clone, e.position) for e in examples], batch_size=2000
            )
            example_of = {old.id: new for old, new in zip(examples, copies)}
            atoms = list(Atom.objects.filter(example__project=project).order_by("id"))
            atom_copies = Atom.objects.bulk_create(
                [
                    Atom(
                        example=example_of[a.example_id],
                        text=a.text,
                        order=a.order,
                        validity=a.validity,
                        effect=a.effect,
                    )
                    for a in atoms
                ],
                batch_size=2000,
            )
            atom_of = {old.id: new for old, new in zip(atoms, atom_copies)}
            Item.objects.bulk_create(
                [
                    Item(
                        project=clone,
                        example=example_of[i.example_id],
                        atom=atom_of.get(i.atom_id),
                        coherence_group=i.coherence_group,
                        is_gold=i.is_gold,
                        gold=i.gold,
                        target=0 if i.is_gold else clone.redundancy,
                        claimable=not i.is_gold,
                        status=Item.Status.DONE if i.is_gold else Item.Status.OPEN,
                    )
                    for i in project.items.order_by("id")
                ],
                batch_size=2000,
            )
    return clone


def add_members(project: Project, names: str) -> list:
    """Admit the users named in `names` (usernames or e-mail addresses, separated by spaces, commas or
    lines). Any name that matches no user is an error and admits nobody."""
    wanted = [name for name in re.split(r"[\s,;]+", names) if name]
    if not wanted:
        raise SettingError({"members": "name at least one user (username or e-mail address)"})
    User = get_user_model()
    found = list(User.objects.filter(Q(username__in=wanted) | Q(email__in=[n for n in wanted if "@" in n])))
    known = {user.username for user in found} | {user.email for user in found if user.email}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SettingError(
            {"members": f"no user named {', '.join(unknown[:10])}" + (" …" if len(unknown) > 10 else "")}
        )
    project.members.add(*found)
    return found


def find_user(username: str):
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise ValueError(f"no user named {username!r}") from None


def find_project(slug: str) -> Project:
    try:
        return Project.objects.get(slug=slug)
    except Project.DoesNotExist:
        raise ValueError(f"no project with the slug {slug!r}") from None
