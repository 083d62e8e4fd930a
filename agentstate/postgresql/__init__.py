"""agentstate's PostgreSQL database backend (``ENGINE = "agentstate.postgresql"``): Django's own, with
commits that synchronous replication did not confirm refused (see ``base``)."""
