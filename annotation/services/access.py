"""Roles and who may do what. Roles are Django groups: admin, author, worker (superusers are admins)."""
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied

ADMIN, AUTHOR, WORKER = "admin", "author", "worker"
ROLES = (ADMIN, AUTHOR, WORKER)


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


def is_admin(user) -> bool:
    return user.is_authenticated and (user.is_superuser or has_role(user, ADMIN))


def can_manage(user, project) -> bool:
    """Authors manage their own projects; admins manage all."""
    return is_admin(user) or (has_role(user, AUTHOR) and project.owner_id == user.pk)


def ensure_can_manage(user, project) -> None:
    if not can_manage(user, project):
        raise PermissionDenied("only the project's author or an admin may do this")


class NotQualified(PermissionDenied):
    """The worker must pass the project's qualification test first."""


def ensure_can_work(project, user) -> None:
    """The gate on every claim and submit, whatever the client: role, qualification, suspension."""
    from annotation.models import WorkerStatus
    from annotation.services.qualification import has_passed

    if not has_role(user, WORKER):
        raise PermissionDenied("only workers may annotate")
    if project.qualification_id and not has_passed(project.qualification, user):
        raise NotQualified("pass this project's qualification test first")
    if WorkerStatus.objects.filter(project=project, worker=user, suspended=True).exists():
        raise PermissionDenied("your work on this project is suspended after failed quality checks")


def grant_role(user, role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.add(group)
    if role == ADMIN:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
