"""The project level: what spans both apps and sits on top of them (DESIGN.md's layers) — the
admin site and its dashboard, the health check, demo data. Nothing below imports it."""
