"""The access log: who read a person's data, which compliance steps were taken, and what a
compliance key asked the API, in one HMAC chain per tenant that whoever can write to the database
cannot forge, edit, reorder or cut undetected (docs/COMPLIANCE.md, "The access log")."""
