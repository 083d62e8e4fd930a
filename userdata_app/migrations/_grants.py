"""What the staff groups' data migrations share: permissions are created after all migrations
(post_migrate), so a migration that grants them on a fresh database creates them first."""

COMPLIANCE_GROUP = "Compliance"
SUPPORT_GROUP = "Support"


def grant_to_group(apps, group_name: str, permissions: dict[str, list[str]]) -> None:
    """Give the group ``group_name`` (created if missing) ``{app_label: [codename, ...]}``."""
    from django.contrib.auth.management import create_permissions

    for app_label in permissions:
        app_config = apps.get_app_config(app_label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=group_name)
    for app_label, codenames in permissions.items():
        group.permissions.add(*Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames))


def grant_to_compliance(apps, permissions: dict[str, list[str]]) -> None:
    grant_to_group(apps, COMPLIANCE_GROUP, permissions)


def revoke_from_compliance(apps, permissions: dict[str, list[str]]) -> None:
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.filter(name=COMPLIANCE_GROUP).first()
    if group is None:
        return
    for app_label, codenames in permissions.items():
        group.permissions.remove(*Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames))
