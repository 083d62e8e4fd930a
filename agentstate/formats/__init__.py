"""Date formats for every page the service renders (settings.FORMAT_MODULE_PATH): one style,
ISO 8601, wherever staff read a time, instead of English prose dates beside ISO ones."""
