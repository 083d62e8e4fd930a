"""Legal holds: data about a tenant, a person or a session that must not be deleted while an
investigation or litigation is pending (GDPR Art. 17(3)(e)). ``services`` places and releases
them, ``selectors`` says what they cover; retention, erasure and every destructive call ask
``selectors`` before deleting (docs/COMPLIANCE.md, "Legal holds")."""
