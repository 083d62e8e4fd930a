"""The admin site: the dashboard as its home page and room for the wide changelists."""

from django.contrib import admin


class AgentStateAdminSite(admin.AdminSite):
    site_header = "agentstate"
    site_title = "agentstate admin"
    index_title = "Dashboard"
    index_template = "admin/agentstate_index.html"
    enable_nav_sidebar = False
