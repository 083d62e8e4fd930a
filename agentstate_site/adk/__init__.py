"""Google ADK's session service endpoints: they span process state (sessions, events, app state in
sessions_app.adk) and user data (``user:`` state in userdata_app.adk), so they live at project level."""
