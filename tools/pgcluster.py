"""Throwaway PostgreSQL clusters for CI, the tests and the benchmarks: initdb into a directory,
start on 127.0.0.1 with the settings given, create databases and roles, make a streaming replica
with pg_basebackup, stop and remove. The settings (port and socket directory included) are written
into the cluster's postgresql.conf, so a plain start after a stop brings it back as it was; a
replica starts with its primary's settings and its own port.

fsync is off: a crash may lose what these clusters hold, and nobody keeps it. As root (CI's
containers) every PostgreSQL program runs as the postgres user, which owns the data directory;
the directory's parent must let that user through (``chmod 755`` a ``mktemp -d``).

Standard library only, so a fresh clone's shell scripts run it before any virtualenv exists::

    python3 -m tools.pgcluster start DIR --port 25432 --set max_connections=200 --database agentstate
    python3 -m tools.pgcluster replica DIR REPLICA_DIR --port 25433
    python3 -m tools.pgcluster adopt COPY_DIR --port 25434   # a copy pg_basebackup made elsewhere
    python3 -m tools.pgcluster stop DIR --remove
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

THROWAWAY = {"listen_addresses": "127.0.0.1", "fsync": "off"}
# What a primary needs before pg_basebackup can copy it and a replica can stream from it.
REPLICATION = {"wal_level": "replica", "max_wal_senders": "5", "hot_standby": "on"}
REPLICATION_HBA = "host replication postgres 127.0.0.1/32 trust\n"
# With password_auth: only the postgres superuser is trusted (locally and on 127.0.0.1); every
# other role gets in only through the lines a caller appends (docs/SCALING.md's recipe does).
POSTGRES_ONLY_HBA = (
    "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost replication postgres 127.0.0.1/32 trust\n"
)


@dataclass(frozen=True)
class Cluster:
    data: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def pid(self) -> int:
        """The postmaster's process id (the first line of postmaster.pid), while it runs."""
        return int((self.data / "postmaster.pid").read_text().split()[0])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pg_bin() -> Path:
    """The newest installed PostgreSQL's server programs (Debian's layout)."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda path: int(path.parent.name))
    if not candidates:
        raise SystemExit("PostgreSQL's server programs are missing (apt-get install postgresql).")
    return candidates[-1]


def _as_postgres() -> list[str]:
    """initdb and postgres refuse to run as root."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _run(program: str, *args: str | Path) -> None:
    subprocess.run([*_as_postgres(), pg_bin() / program, *args], check=True, stdout=subprocess.DEVNULL)  # noqa: S603 (PostgreSQL's own programs, arguments this tool builds)


def _make_private(data: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    data.chmod(0o700)


def _configure(data: Path, settings: Mapping[str, str]) -> None:
    """Append ``settings`` to postgresql.conf: the last line naming a setting wins."""
    lines = "".join(f"{name} = '{value.replace(chr(39), chr(39) * 2)}'\n" for name, value in settings.items())
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(f"\n# tools.pgcluster\n{lines}")


def cluster_create(
    data: Path,
    *,
    port: int,
    socket_dir: Path | None = None,
    settings: Mapping[str, str] | None = None,
    replication: bool = False,
    password_auth: bool = False,
) -> Cluster:
    """initdb into ``data`` (new or empty) with trust authentication, then write the settings.
    ``password_auth`` trusts the postgres role only (POSTGRES_ONLY_HBA)."""
    data.mkdir(parents=True, exist_ok=True)
    _make_private(data)
    _run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
    _configure(
        data,
        {
            "port": str(port),
            "unix_socket_directories": str(socket_dir or data),
            **THROWAWAY,
            **(REPLICATION if replication else {}),
            **(settings or {}),
        },
    )
    if password_auth:
        (data / "pg_hba.conf").write_text(POSTGRES_ONLY_HBA)
    elif replication:
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(REPLICATION_HBA)
    return Cluster(data=data, port=port)


def cluster_start(data: Path) -> Cluster:
    """Start the cluster in ``data`` and wait until it accepts connections."""
    log = data / "server.log"
    try:
        _run("pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start")
    except subprocess.CalledProcessError:
        raise SystemExit(f"PostgreSQL did not start in {data}; the end of {log}:\n{log.read_text()[-2000:]}") from None
    return cluster_running(data)


def cluster_running(data: Path) -> Cluster:
    """The cluster that runs in ``data`` (postmaster.pid's fourth line is its port)."""
    return Cluster(data=data, port=int((data / "postmaster.pid").read_text().splitlines()[3]))


def cluster_stop(data: Path, *, remove: bool = False) -> None:
    """Stop the cluster in ``data`` if it runs (fast: open sessions are ended); ``remove`` deletes it."""
    if (data / "postmaster.pid").exists():
        _run("pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
    if remove:
        shutil.rmtree(data, ignore_errors=True)


def database_create(cluster: Cluster, name: str, *, owner: str = "postgres") -> None:
    _run("createdb", "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres", "-O", owner, name)


def role_create(cluster: Cluster, name: str, *, superuser: bool = False) -> None:
    """A role that logs in without a password (the cluster trusts every local connection)."""
    kind = "--superuser" if superuser else "--no-superuser"
    _run("createuser", "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres", "--login", kind, name)


def cluster_sql(cluster: Cluster, statement: str, *, database: str = "postgres") -> None:
    """Run one statement as postgres (setup only: its output is dropped)."""
    _run("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", cluster.url(database), "-c", statement)


def replica_create(
    primary: Cluster,
    data: Path,
    *,
    port: int,
    socket_dir: Path | None = None,
    settings: Mapping[str, str] | None = None,
) -> Cluster:
    """``pg_basebackup -R`` of a running primary into ``data``: a hot standby streaming from it once
    started, with the primary's settings and its own port and socket directory."""
    data.mkdir(parents=True, exist_ok=True)  # made here, so that the postgres user may write into it
    _make_private(data)
    _run(
        "pg_basebackup",
        *("-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"),
        *("-D", data, "-R", "-X", "stream", "-c", "fast"),
    )
    return replica_adopt(data, port=port, socket_dir=socket_dir, settings=settings)


def replica_adopt(
    data: Path, *, port: int, socket_dir: Path | None = None, settings: Mapping[str, str] | None = None
) -> Cluster:
    """A copy ``pg_basebackup`` made (with the primary's settings) gets its own port and socket
    directory, and ``settings`` over the primary's."""
    _configure(data, {"port": str(port), "unix_socket_directories": str(socket_dir or data), **(settings or {})})
    return Cluster(data=data, port=port)


def _workdir(prefix: str) -> Path:
    """A temporary directory for a data directory and its socket (outside it, so that
    pg_basebackup need not skip it), writable by the postgres user."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
    return workdir


@contextlib.contextmanager
def throwaway(
    *,
    port: int | None = None,
    settings: Mapping[str, str] | None = None,
    replication: bool = False,
    databases: Sequence[str] = (),
    prefix: str = "agentstate-pg-",
) -> Iterator[Cluster]:
    """A running cluster in a temporary directory (on a free port unless one is given), with
    ``databases`` created; stopped and removed on the way out, pass or fail."""
    workdir = _workdir(prefix)
    data = workdir / "data"
    try:
        cluster_create(data, port=port or free_port(), socket_dir=workdir, settings=settings, replication=replication)
        cluster = cluster_start(data)
        for name in databases:
            database_create(cluster, name)
        yield cluster
    finally:
        cluster_stop(data)
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def throwaway_replica(
    primary: Cluster,
    *,
    port: int | None = None,
    settings: Mapping[str, str] | None = None,
    prefix: str = "agentstate-pg-replica-",
) -> Iterator[Cluster]:
    """A running streaming replica of ``primary`` in a temporary directory, ``settings`` over the
    primary's; removed on the way out."""
    workdir = _workdir(prefix)
    data = workdir / "data"
    try:
        replica_create(primary, data, port=port or free_port(), socket_dir=workdir, settings=settings)
        yield cluster_start(data)
    finally:
        cluster_stop(data)
        shutil.rmtree(workdir, ignore_errors=True)


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not (name and sep):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m tools.pgcluster", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="initdb DIR if it holds no cluster yet, then start it")
    start.add_argument("data", type=Path, metavar="DIR")
    start.add_argument("--port", type=int, required=True, help="a new cluster's port")
    start.add_argument("--socket-dir", type=Path, help="where the Unix socket goes (default: DIR)")
    start.add_argument(
        "--set", type=_setting, action="append", default=[], metavar="NAME=VALUE", help="a new cluster's setting"
    )
    start.add_argument("--replication", action="store_true", help="ready to be copied by the replica command")
    start.add_argument(
        "--password-auth", action="store_true", help="trust only the postgres role; append pg_hba lines for others"
    )
    start.add_argument("--role", action="append", default=[], help="a login role to create (repeatable)")
    start.add_argument("--database", action="append", default=[], help="a database to create (repeatable)")
    replica = commands.add_parser("replica", help="pg_basebackup a running primary into REPLICA_DIR and start it")
    replica.add_argument("primary", type=Path, metavar="DIR")
    replica.add_argument("data", type=Path, metavar="REPLICA_DIR")
    replica.add_argument("--port", type=int, required=True)
    replica.add_argument("--socket-dir", type=Path, help="where the Unix socket goes (default: REPLICA_DIR)")
    adopt = commands.add_parser("adopt", help="give a copy pg_basebackup made in DIR its own port, then start it")
    adopt.add_argument("data", type=Path, metavar="DIR")
    adopt.add_argument("--port", type=int, required=True)
    adopt.add_argument("--socket-dir", type=Path, help="where the Unix socket goes (default: DIR)")
    stop = commands.add_parser("stop", help="stop the cluster in DIR if it runs")
    stop.add_argument("data", type=Path, metavar="DIR")
    stop.add_argument("--remove", action="store_true", help="then delete DIR")
    args = parser.parse_args(argv)
    try:
        _command(args)
    except subprocess.CalledProcessError as failed:
        raise SystemExit(f"failed ({failed.returncode}): {' '.join(map(str, failed.cmd))}") from None


def _command(args: argparse.Namespace) -> None:

    if args.command == "start":
        if not (args.data / "PG_VERSION").exists():
            cluster_create(
                args.data,
                port=args.port,
                socket_dir=args.socket_dir,
                settings=dict(args.set),
                replication=args.replication,
                password_auth=args.password_auth,
            )
        cluster = cluster_start(args.data)
        for role in args.role:
            role_create(cluster, role)
        for database in args.database:
            database_create(cluster, database)
    elif args.command == "replica":
        replica_create(cluster_running(args.primary), args.data, port=args.port, socket_dir=args.socket_dir)
        cluster_start(args.data)
    elif args.command == "adopt":
        replica_adopt(args.data, port=args.port, socket_dir=args.socket_dir)
        cluster_start(args.data)
    else:
        cluster_stop(args.data, remove=args.remove)


if __name__ == "__main__":
    main()
