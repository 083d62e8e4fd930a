"""Staff users for the admin tests: made with exactly the groups and permissions a case names."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from tests.userdata_app.erasure_factories import compliance_group, support_group

GROUPS = {"Compliance": compliance_group, "Support": support_group}  # as their migrations make them


def staff(username, *, groups=(), perms=()):
    user = get_user_model().objects.create_user(username, is_staff=True)
    for name in groups:
        user.groups.add(GROUPS[name]() if name in GROUPS else Group.objects.get(name=name))
    for name in perms:
        app_label, codename = name.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return user


def login(client, user):
    client.force_login(user)
    return client
