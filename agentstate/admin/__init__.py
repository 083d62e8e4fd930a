"""The admin toolkit both apps build their model admins from, split as ``django.contrib.admin``
splits itself: ``options`` (the read-only ModelAdmin), ``filters``, ``pagination`` and ``display``
(JSON, previews, identifiers).

Built for big tables: counts capped at ``CappedPaginator.cap`` rows, exact, case-sensitive searches
on indexed columns only, exact-match text filters instead of "list every distinct value" filters.
Identifiers are matched and shown exactly as the API stored them: a search or filter value is never
stripped or split, is checked by the API's ``clean_identifier``, and ids are displayed with their
invisible characters spelled out (``identifier_visible``).

The platform names no model of the apps, and Django's autodiscovery imports this package as the
``agentstate`` app's admin: it registers nothing.
"""
