"""gunicorn settings for agentstate: ``gunicorn -c gunicorn.conf.py`` (see docs/OPERATIONS.md).

Every value can be overridden by an environment variable, so one file serves every deployment.
"""

import glob
import logging
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile

from agentstate.logging import ServerErrorFilter

wsgi_app = "agentstate_site.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Threaded workers keep a client's connection open between its requests (gunicorn's default sync
# worker closes it after every answer: a new connection per call, about 2.7 ms here). Each thread
# may hold a database connection, so workers x threads is the app server's share of the database's
# connections (docs/SCALING.md, "The connection budget"); a worker per core plus one keeps the cores
# busy while threads wait on the database, and four threads per worker kept the appends' p99 lowest.
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# Kills a worker whose loop stopped answering; a slow request holds one thread, its worker's loop runs on,
# and the request is bounded by its own waits (docs/SCALING.md, "Every wait is bounded").
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
# Idle kept-alive connections wait in the worker's poller, not in a thread. Longer than the proxy
# keeps an idle connection to gunicorn, so that the proxy closes it first: closed here first, a
# request the proxy sends at that moment meets a closing socket (docs/SCALING.md, "The proxy").
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "75"))
# Each worker touches a heartbeat file on every turn of its loop; on a disk-backed temporary
# directory that system call can wait behind the disk's other writes (gunicorn's documentation says
# so; PostgreSQL's checkpoints on the same disk are such writes), in memory it cannot.
worker_tmp_dir = os.environ.get("GUNICORN_WORKER_TMP_DIR") or ("/dev/shm" if os.path.isdir("/dev/shm") else None)  # noqa: S108 (gunicorn makes its heartbeat files there with mkstemp; in memory, see above)
# Recycle workers now and then so a slow leak never takes a process down; rarely, because a new
# worker re-imports Django (about a second of CPU): at a few hundred requests/s per worker, 2,000
# requests meant a restart every few seconds (docs/PERFORMANCE_HISTORY.md).
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "50000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", "5000"))
# gunicorn has no memory limit of its own, and a Python process seldom hands freed memory back: a
# worker whose resident memory passed this bound after a request finishes it and exits gracefully,
# and the master starts a fresh one (0 turns the check off). Every answer is bounded by bytes
# (docs/OPERATIONS.md), so a worker passes it only after a rare large request.
max_worker_memory_mb = int(os.environ.get("GUNICORN_MAX_WORKER_MEMORY_MB", "1024"))


def post_request(worker, req, environ, resp):
    """Recycle this worker after the request when it holds more than ``max_worker_memory_mb``."""
    # Resident memory is never above the peak: its /proc read (open, read, close) waits until the
    # peak, one system call, passed the bound.
    if max_worker_memory_mb and worker.alive and peak_mib() > max_worker_memory_mb:
        resident = resident_mib()
        if resident > max_worker_memory_mb:
            worker.log.info(
                "Recycling worker at %d MiB (GUNICORN_MAX_WORKER_MEMORY_MB=%d)", resident, max_worker_memory_mb
            )
            # What gunicorn does at max_requests: from any of its threads, the worker stops taking
            # connections, lets the other threads' requests finish and exits; the master replaces it.
            worker.alive = False


def resident_mib() -> int:
    """This process's resident memory (Linux); its peak where /proc is missing."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20
    except OSError:
        return peak_mib()


def peak_mib() -> int:
    """The most resident memory this process has held."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak // 2**20 if sys.platform == "darwin" else peak // 2**10


# Forked workers open their own database connections: never load the app in the master.
preload_app = False
# The app writes one JSON line per request (agentstate.middleware); gunicorn's access log would
# repeat it without the request id, and its query strings could carry identifiers.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Its warnings about refused requests quote them (a request line names user ids): keep the kind only.
logging.getLogger("gunicorn.error").addFilter(ServerErrorFilter())
# Past these limits gunicorn answers by itself, in HTML (docs/OPERATIONS.md); within them the app
# answers in its JSON error shape. 8190 bytes is the longest request line gunicorn can bound
# (its default is 4094); 0 would mean unbounded.
limit_request_line = int(os.environ.get("GUNICORN_LIMIT_REQUEST_LINE", "8190"))
limit_request_fields = int(os.environ.get("GUNICORN_LIMIT_REQUEST_FIELDS", "100"))
limit_request_field_size = int(os.environ.get("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", "8190"))
# Proxies allowed to set X-Forwarded-* (the one in front of gunicorn).
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

# gunicorn 25.1+ opens a control socket at one fixed path per user ($HOME/.gunicorn/gunicorn.ctl):
# two servers on one host (or a restarted one whose killed master still holds it) would share it.
# Nothing here uses gunicornc; older releases ignore the name.
control_socket_disable = True

# /metrics' counters (agentstate.metrics): each worker counts into a file of this directory and a
# scrape sums them all, so whichever worker answers gives the server's count, workers recycled
# since included. A directory of the operator's (PROMETHEUS_MULTIPROC_DIR) is emptied at start;
# otherwise each server makes its own, in memory like the heartbeat files, and removes it at exit.
_metrics_dir_made = False


def on_starting(server):
    """Before any worker starts (they inherit the environment): the counters' directory, empty."""
    global _metrics_dir_made
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        for stale in glob.glob(os.path.join(directory, "*.db")):
            os.remove(stale)  # an earlier run's counts would be added to this one's
    else:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="agentstate-metrics-", dir=worker_tmp_dir)
        _metrics_dir_made = True


def on_exit(server):
    if _metrics_dir_made:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
