# Django's "en" formats write "Nov. 23, 2026, 5:45 p.m."; the admin's own tables, the erasure
# receipt and the API write ISO dates. One style on every page (the time zone is settings.TIME_ZONE).
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i:s"
FIRST_DAY_OF_WEEK = 1  # Monday
