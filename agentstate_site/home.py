"""``/``: a small page saying where things are (the admin's "View site" link leads here)."""

from django.views.generic import TemplateView


class HomeView(TemplateView):
    template_name = "agentstate/home.html"
