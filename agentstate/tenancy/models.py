"""Tenants: the unit of isolation. Every stored row belongs to exactly one."""
from django.db import models


class Tenant(models.Model):
    slug = models.SlugField(max_length=64, unique=True, help_text="Stable name used by API keys and commands.")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug
