"""Files agents keep about people (Google ADK's artifacts): versions attributed to a user, bytes in storage."""
