"""Roles and the access rules that need no feature app.

Roles are Django groups: admin, author, worker (superusers are admins). A user's roles are read with the
user in one statement (with_roles), together with the per-user facts feature apps register
(register_user_fact: the annotation app's crowd study), so that authentication costs one query.

One status policy everywhere: what you may not see answers 404, as if it did not exist; what you may see
but not act on answers 403 with the reason. Stored runs (evaluation and model jobs) follow it here; the
projects' rules are annotation.services.access.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, Expression, OuterRef, QuerySet
from django.http import Http404

ADMIN, AUTHOR, WORKER = "admin", "author", "worker"
ROLES = (ADMIN, AUTHOR, WORKER)

# name -> a function of the reference to the user's id giving the subquery that reads the fact; each fact
# is kept on the user as `_<name>`.
USER_FACTS: dict[str, Callable[[OuterRef], Expression]] = {}


def register_user_fact(name: str, expression: Callable[[OuterRef], Expression]) -> None:
    """Read a per-user fact with the user and their roles (call from an AppConfig.ready, before requests)."""
    USER_FACTS[name] = expression


def has_role(user, role: str) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    names = getattr(user, "_role_names", None)
    if names is None:
        names = set(user.groups.values_list("name", flat=True))
        user._role_names = names
    return role in names or (role != WORKER and ADMIN in names)


def with_roles(users: QuerySet, user_field: str = "pk") -> QuerySet:
    """Rows that load a user (users, or tokens with their user) with that user's roles and registered facts,
    read in the same statement: authentication then costs one query instead of two or three on every
    request."""
    return users.annotate(
        **{f"_{name}": expression(OuterRef(user_field)) for name, expression in USER_FACTS.items()},
        **{f"_has_role_{role}": Exists(Group.objects.filter(user=OuterRef(user_field), name=role)) for role in ROLES},
    )


def remember_roles(user, row) -> None:
    """Keep what with_roles() read on the user, where has_role() and the facts' readers look first."""
    user._role_names = {role for role in ROLES if getattr(row, f"_has_role_{role}")}
    for name in USER_FACTS:
        setattr(user, f"_{name}", getattr(row, f"_{name}"))


def is_admin(user) -> bool:
    return user.is_authenticated and (user.is_superuser or has_role(user, ADMIN))


def grant_role(user, role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.add(group)
    if role == ADMIN:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    user.__dict__.pop("_role_names", None)


def ensure_role(user, role: str, doing: str) -> None:
    """403 for a feature the user's role does not include (the page exists, it is not theirs)."""
    if not has_role(user, role):
        raise PermissionDenied(f"only {role}s {doing}")


# ---------------------------------------------------------------------------- stored runs


def visible_runs(user, runs: QuerySet) -> QuerySet:
    """Of a queryset of stored runs (evaluation or model jobs): admins see all, authors their own."""
    if is_admin(user):
        return runs
    if has_role(user, AUTHOR):
        return runs.filter(created_by=user)
    return runs.none()


def run_for(user, runs: QuerySet, run_id):
    """One run the user may see; 403 for users whose role has no runs, 404 for a run that is not theirs."""
    ensure_role(user, AUTHOR, "run evaluations and models")
    run = visible_runs(user, runs).filter(pk=run_id).first()
    if run is None:
        raise Http404("no such run")
    return run
