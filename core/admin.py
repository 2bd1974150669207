"""Users in the Django admin for the admin role (README: admins manage users there). The role holds no
per-model permissions (core/roles.py), so its rights are given here, narrower than a superuser's: an admin
adds users, changes them (password, active, their roles as groups, staff status) and deactivates them, but
cannot make or change a superuser, give per-model permissions, or delete a user (erasing a participant's data
is `forget_participant`'s, which keeps the study's answers)."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from core import roles

User = get_user_model()
SUPERUSER_ONLY_FIELDS = ("is_superuser", "user_permissions")


class RoleAdminUserAdmin(UserAdmin):
    def has_module_permission(self, request):
        return roles.is_admin(request.user)

    def has_view_permission(self, request, obj=None):
        return roles.is_admin(request.user)

    def has_add_permission(self, request):
        return roles.is_admin(request.user)

    def has_change_permission(self, request, obj=None):
        if request.user.is_superuser:
            return True
        return roles.is_admin(request.user) and not (obj is not None and obj.is_superuser)

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if request.user.is_superuser:
            return fieldsets
        return [
            (name, {**options, "fields": [field for field in options["fields"] if field not in SUPERUSER_ONLY_FIELDS]})
            for name, options in fieldsets
        ]


admin.site.unregister(User)
admin.site.register(User, RoleAdminUserAdmin)
