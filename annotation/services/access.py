"""Who may do what with a project: HTML views, API permissions, the WebSocket consumer and the management
commands all ask this module. Roles and stored runs are core.roles.

One status policy everywhere: a project you may not see answers 404, as if it did not exist; one you may
see but not act on answers 403 with the reason. `project_for(user, slug, action)` applies it.

    view    the project's owner and admins; workers while it is published or paused and its audience
            admits them (everyone, its members, or workers who arrived through its platform link)
    work    a worker who may view it: new pages only while it is published, submits of pages already
            handed out while paused; passed its qualification test; not blocked or suspended
    manage  its owner (an author) and admins
    export  who may manage it, and holders of the `export_any_project` permission
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import Http404
from django.shortcuts import get_object_or_404

from common.compiled_queries import compiled_first
from core.roles import AUTHOR, WORKER, ensure_role, has_role, is_admin

ACTIONS = ("view", "work", "submit", "manage", "export")
UNREAD = object()  # an attribute not read yet (None is a value: "not a crowd account")


class NotQualified(PermissionDenied):
    """The worker must pass the project's qualification test first."""


class NotOpen(PermissionDenied):
    """The project takes no new pages now (paused, or closed)."""


# ---------------------------------------------------------------------------- projects


def crowd_study(user) -> int | None:
    """The first study a crowd account (made by a platform entry link for one participant) works on (it may
    work on the studies linked to it that the participant arrived in too: annotation.services.crowd.crowd); None for
    every other account."""
    from annotation.models import CrowdSession

    study = getattr(user, "_crowd_study", UNREAD)  # getattr: request.user is a lazy wrapper around the user
    if study is UNREAD:
        study = user._crowd_study = (
            CrowdSession.objects.filter(worker=user.pk).values_list("project_id", flat=True).first()
        )
    return study


def crowd_study_of(user_id: OuterRef) -> Subquery:
    """The crowd study read with a user and their roles (core.roles.register_user_fact, in apps.py)."""
    from annotation.models import CrowdSession

    return Subquery(CrowdSession.objects.filter(worker=user_id).values("project_id")[:1])


def installed_projects() -> QuerySet:
    """Every project whose task type is installed. A study of a feature app's task type is kept but served
    nowhere while that app is left out of INSTALLED_APPS: it answers 404, as if it did not exist."""
    from annotation.models import Project
    from annotation.tasktypes import TASK_TYPES

    return Project.objects.filter(task_type__in=list(TASK_TYPES))


def managed_projects(user) -> QuerySet:
    from annotation.models import Project

    if is_admin(user):
        return installed_projects()
    if has_role(user, AUTHOR):
        return installed_projects().filter(owner=user)
    return Project.objects.none()


def _audience_admits(user) -> Q:
    """Which audiences admit this user. A platform study's only workers are its crowd accounts, and a crowd
    account works on the studies it arrived in (its own, and linked ones) and nothing else."""
    from annotation.models import CrowdSession, Project

    study = crowd_study(user)
    if study is not None:  # one participant's account: the studies they arrived in (one, or linked ones)
        return Q(pk__in=CrowdSession.objects.filter(worker=user.pk).values("project_id"))
    return (
        Q(audience=Project.Audience.EVERYONE)
        | Q(audience=Project.Audience.MEMBERS, members=user)
        | Q(audience=Project.Audience.MEMBERS, member_groups__in=user.groups.all())
    )


def workable_projects(user) -> QuerySet:
    """Projects a worker may see: published or paused, and their audience admits the worker."""
    from annotation.models import Project

    if not has_role(user, WORKER):
        return Project.objects.none()
    visible = installed_projects().filter(status__in=(Project.Status.PUBLISHED, Project.Status.PAUSED))
    return Project.objects.filter(pk__in=visible.filter(_audience_admits(user)).values("pk"))


def entry_project(slug: str):
    """The study a crowd platform link names, whatever its state: the arrival's outcome (whether it opens a
    session, or which page turns it away) is crowd.arrival_turnaway()'s to decide. 404 for no such study."""
    return get_object_or_404(installed_projects().select_related("qualification"), slug=slug)


def admitted_platforms(audience: str) -> tuple[str, ...]:
    """The crowd platforms whose entry links a study of this audience takes (none for a members-only one)."""
    from annotation.models import CrowdSession, Project

    both = (CrowdSession.Platform.PROLIFIC, CrowdSession.Platform.MTURK)
    return {
        Project.Audience.EVERYONE: both,
        Project.Audience.PLATFORM: both,
        Project.Audience.PROLIFIC: (CrowdSession.Platform.PROLIFIC,),
        Project.Audience.MTURK: (CrowdSession.Platform.MTURK,),
    }.get(audience, ())


def visible_projects(user) -> QuerySet:
    """Every project the user may see (manage or work on)."""
    from annotation.models import Project

    if not user.is_authenticated:
        return Project.objects.none()
    if is_admin(user):
        return installed_projects()
    return Project.objects.filter(
        Q(pk__in=managed_projects(user).values("pk")) | Q(pk__in=workable_projects(user).values("pk"))
    )


def can_manage(user, project) -> bool:
    """Authors manage their own projects; admins manage all."""
    return is_admin(user) or (has_role(user, AUTHOR) and project.owner_id == user.pk)


def can_export(user, project) -> bool:
    return can_manage(user, project) or (user.is_authenticated and user.has_perm("annotation.export_any_project"))


def can_view(user, project) -> bool:
    # A study of a left-out app's task type is served to nobody (installed_projects()), whatever the way in.
    if not user.is_authenticated or not project.task_installed:
        return False
    # A yes is remembered on the project object for this user and this status and audience: a claim or
    # submit asks on the route and again in the service, and the answer costs a query (or three).
    key = (user.pk, project.status, project.audience)
    if getattr(project, "_viewable_by", None) == key:
        return True
    # Workers first: the export permission (two queries) is asked only of users who may not work on it.
    viewable = can_manage(user, project) or _workable(user, project) or can_export(user, project)
    if viewable:
        project._viewable_by = key
    return viewable


def _workable(user, project) -> bool:
    """The rule of workable_projects() for one project already in hand: its status and audience are read from
    the object, so a claim or submit (the hot path) asks at most one plain query where the queryset form
    needs nested subqueries that cost more to build than to run. tests/security/test_permissions.py checks
    that both forms agree for every audience."""
    from annotation.models import Project

    if not has_role(user, WORKER) or project.status not in (Project.Status.PUBLISHED, Project.Status.PAUSED):
        return False
    return _audience_admits_project(user, project)


def with_work_state(rows: QuerySet, worker_id: int, project_field: str = "pk", open_page: bool = False) -> QuerySet:
    """Rows that load a project (projects, or pages with their project) with what a claim or submit asks of
    this worker in it, read in the same statement: their standing (suspended, blocked) for the work check,
    and with `open_page` the page they hold open (its id, or none)."""
    from django.db.models.functions import Now

    from annotation.models import Assignment, WorkerStatus

    standing = WorkerStatus.objects.filter(project=OuterRef(project_field), worker=worker_id)
    rows = rows.annotate(
        _standing_suspended=Subquery(standing.values("suspended")[:1]),
        _standing_blocked=Subquery(standing.values("blocked")[:1]),
    )
    if open_page:
        held = Assignment.objects.filter(
            project=OuterRef(project_field), worker=worker_id, status=Assignment.Status.OPEN, expires_at__gt=Now()
        )
        rows = rows.annotate(_open_page=Subquery(held.order_by("created_at").values("pk")[:1]))
    return rows


def remember_work_state(project, user, row) -> None:
    """Keep what with_work_state() read on the project, for this user's next work check and claim only."""
    project._standing = (user.pk, (bool(row._standing_suspended), bool(row._standing_blocked)))
    if hasattr(row, "_open_page"):
        project._open_page = (user.pk, row._open_page)


def known_open_page(project, user) -> tuple[bool, int | None]:
    """(known, page id) of the worker's open page as read with the project, used once."""
    known = project.__dict__.pop("_open_page", None)
    if known is None or known[0] != user.pk:
        return False, None
    return True, known[1]


def _audience_admits_project(user, project) -> bool:
    """_audience_admits() for one loaded project."""
    from annotation.models import CrowdSession, Project

    study = crowd_study(user)
    if study is not None:
        return project.pk == study or CrowdSession.objects.filter(worker=user.pk, project=project).exists()
    if project.audience == Project.Audience.EVERYONE:
        return True
    return project.audience == Project.Audience.MEMBERS and (
        project.members.filter(pk=user.pk).exists()
        or project.member_groups.filter(pk__in=user.groups.values("pk")).exists()
    )


def work_refusal(user, project, new_page: bool = True) -> PermissionDenied | None:
    """Why this worker may not claim (new_page) or submit now, or None when they may. Assumes can_view."""
    from annotation.models import Project, WorkerStatus
    from annotation.services.qualification import has_passed

    if not has_role(user, WORKER):
        return PermissionDenied("only workers may annotate")
    refusal = new_page_refusal(project) if new_page else None
    if refusal is not None or project.status not in (Project.Status.PUBLISHED, Project.Status.PAUSED):
        return refusal or NotOpen("this study is closed")
    if project.qualification_id and not has_passed(project.qualification, user):
        # Someone who has not passed holds no page: while no new pages are handed out, the test waits too.
        return new_page_refusal(project) or NotQualified("pass this project's qualification test first")
    # Read with the project where it was loaded for this request (used once, so it is never stale).
    known = project.__dict__.pop("_standing", None)
    if known is not None and known[0] == user.pk:
        standing = known[1]
    else:
        standing = WorkerStatus.objects.filter(project=project, worker=user).values_list("suspended", "blocked").first()
    if standing and standing[1]:
        return PermissionDenied("the researchers have stopped your work on this study")
    if standing and standing[0]:
        return PermissionDenied("your work on this project is suspended after failed quality checks")
    return None


def new_page_refusal(project) -> NotOpen | None:
    """Only a published study hands out new pages; a paused one still takes the pages it handed out."""
    from annotation.models import Project

    if project.status == Project.Status.PUBLISHED:
        return None
    if project.status == Project.Status.PAUSED:
        return NotOpen("this study is paused: it hands out no new pages for now")
    return NotOpen("this study is closed")


def ensure_can_work(project, user, new_page: bool = True) -> None:
    """The gate on every claim (new_page) and submit, whatever the client; 404 when the worker may not
    see the project at all."""
    if not can_view(user, project):
        raise Http404("no such project")
    refusal = work_refusal(user, project, new_page)
    if refusal is not None:
        raise refusal


def ensure_can_manage(user, project) -> None:
    if not can_view(user, project):
        raise Http404("no such project")
    if not can_manage(user, project):
        raise PermissionDenied("only the project's author or an admin may do this")


def project_for(user, slug: str, action: str = "view"):
    """The project named `slug` if `user` may `action` it: Http404 when they may not see it, PermissionDenied
    (with the reason) when they may see it but not do this."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    working = action in ("view", "work", "submit") and has_role(user, WORKER)
    project = (
        compiled_first(_project_with_work_state, action != "submit", slug=slug, worker_id=user.pk)
        if working
        else compiled_first(_project_named, slug=slug)
    )
    if project is not None and working:
        remember_work_state(project, user, project)
    if project is None or not can_view(user, project):
        raise Http404("no such project")
    if action == "manage" and not can_manage(user, project):
        raise PermissionDenied("only the project's author or an admin may do this")
    if action == "export" and not can_export(user, project):
        raise PermissionDenied("only the project's author or an admin may export it")
    if action in ("work", "submit"):
        refusal = work_refusal(user, project, new_page=action == "work")
        if refusal is not None:
            raise refusal
    return project


# project_for()'s statements, compiled once per process (they run on every claim and submit); a worker's
# project comes with their work state in it.
def _projects_named(slug: str) -> QuerySet:
    from annotation.models import Project

    return Project.objects.select_related("owner", "qualification").filter(slug=slug)


def _project_named(*, slug: str) -> QuerySet:
    return _projects_named(slug)[:1]


def _project_with_work_state(open_page: bool, *, slug: str, worker_id: int) -> QuerySet:
    return with_work_state(_projects_named(slug), worker_id, open_page=open_page)[:1]


def ensure_can_create_project(user) -> None:
    ensure_role(user, AUTHOR, "create projects")
