"""Long-term memory about people (LangGraph's store): namespaced items, user data by convention."""
