from core.roles import AUTHOR, has_role


def roles(request) -> dict:
    """Navigation needs to know whether the user may author (admins may too)."""
    return {"can_author": has_role(request.user, AUTHOR)}
