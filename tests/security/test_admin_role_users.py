"""The admin role manages users in the Django admin, as the README says, without a superuser's powers."""

from django.contrib.auth import get_user_model
from django.test import Client

from core import roles


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_role_lists_adds_and_changes_users_but_no_superuser(make_user):
    admin_user, worker = make_user("role-admin", "admin"), make_user("some-worker", "worker")
    root = get_user_model().objects.create_superuser("root", password="a-root-password")
    client = signed_in(admin_user)
    listing = client.get("/admin/auth/user/")
    assert listing.status_code == 200 and "some-worker" in listing.content.decode()
    page = client.get(f"/admin/auth/user/{worker.pk}/change/").content.decode()
    assert 'name="is_active"' in page and 'name="is_superuser"' not in page and "user_permissions" not in page
    changed = client.post(
        f"/admin/auth/user/{worker.pk}/change/",
        {
            "username": "some-worker",
            "is_active": "",
            "is_staff": "",
            "is_superuser": "on",  # not a field for this admin: ignored
            "groups": [worker.groups.get().pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert changed.status_code == 302, changed.content.decode()[:2000]
    worker.refresh_from_db()
    assert not worker.is_active and not worker.is_superuser
    added = client.post(
        "/admin/auth/user/add/",
        {
            "username": "newcomer",
            "password1": "a-long-password-2",
            "password2": "a-long-password-2",
            "usable_password": "true",
        },
    )
    assert added.status_code == 302 and get_user_model().objects.filter(username="newcomer").exists()
    # A superuser is seen, not changed (its password neither); nobody is deleted by the role.
    assert client.post(f"/admin/auth/user/{root.pk}/change/", {"username": "root"}).status_code == 403
    assert client.post(f"/admin/auth/user/{root.pk}/password/", {}).status_code == 403
    assert client.post(f"/admin/auth/user/{worker.pk}/delete/", {"post": "yes"}).status_code == 403
    assert roles.is_admin(admin_user) and get_user_model().objects.filter(pk=worker.pk).exists()


def test_authors_and_workers_do_not_reach_the_users(make_user):
    for role in ("author", "worker"):
        answer = signed_in(make_user(f"a-{role}", role)).get("/admin/auth/user/")
        assert answer.status_code == 302 and "/admin/login/" in answer["Location"]
