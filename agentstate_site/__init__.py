"""The project level: what spans both apps and sits on top of them (docs/DESIGN.md, "Layers"): the
admin site and its dashboard, the ADK endpoints, the health check, demo data. Nothing below
imports it."""
