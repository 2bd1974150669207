"""Creating projects with the task type's defaults."""
from django.contrib.auth import get_user_model

from annotation.models import Project
from annotation.tasktypes import get_task_type


def create_project(
    slug: str,
    task_type: str,
    owner,
    title: str = "",
    items_per_page: int | None = None,
    redundancy: int | None = None,
    max_annotations: int | None = None,
    instructions: str = "",
    options: dict | None = None,
) -> Project:
    task = get_task_type(task_type)
    if Project.objects.filter(slug=slug).exists():
        raise ValueError(f"a project with the slug {slug!r} exists already")
    redundancy = redundancy or task.default_redundancy
    if items_per_page is not None and not 1 <= items_per_page <= 50:
        raise ValueError("items per page must be from 1 to 50")
    return Project.objects.create(
        slug=slug,
        title=title or slug.replace("-", " ").capitalize(),
        task_type=task_type,
        owner=owner,
        items_per_page=items_per_page or task.default_items_per_page,
        redundancy=redundancy,
        max_annotations=max(max_annotations or task.default_max_annotations, redundancy),
        instructions=instructions,
        options={**task.default_options(), **(options or {})},
    )


def find_user(username: str):
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise ValueError(f"no user named {username!r}") from None


def find_project(slug: str):
    from annotation.models import Project

    try:
        return Project.objects.get(slug=slug)
    except Project.DoesNotExist:
        raise ValueError(f"no project with the slug {slug!r}") from None
