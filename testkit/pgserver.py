"""A throwaway PostgreSQL server on 127.0.0.1 for the team-memory tests and benches.

It is the real server (Debian's ``postgresql`` package, ``scripts/install-postgres.sh``): a fresh
cluster made by ``initdb`` in a temporary folder, started by ``pg_ctl`` on a free port, listening
on 127.0.0.1 only, with trust authentication for the user ``clio``. PostgreSQL refuses to run as
root, so under root the cluster belongs to, and runs as, the unprivileged ``postgres`` user.
:func:`why_not` says in one sentence why no server can start here (tests skip with it).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

USER = "clio"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    exe = shutil.which("pg_ctl")
    return Path(exe).parent if exe else None


def _runner() -> list[str] | None:
    """The command prefix that runs the server as an unprivileged user (None: nobody can)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None
    runuser = shutil.which("runuser")
    return [runuser, "-u", "postgres", "--"] if runuser else None


def why_not() -> str | None:
    """Why a test server cannot start here, or None when it can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    if _bin_dir() is None:
        return "no PostgreSQL server (initdb/pg_ctl): run scripts/install-postgres.sh"
    if _runner() is None:
        return "running as root without a 'postgres' user to run the server as"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One cluster: ``start()``, ``stop()`` (mid-work, as an outage), ``start()`` again, ``close()``."""

    def __init__(self, *, durable: bool = False) -> None:
        bin_dir, runner = _bin_dir(), _runner()
        assert bin_dir is not None and runner is not None, why_not()
        self.bin, self.runner, self.durable = bin_dir, runner, durable
        self.dir = Path(tempfile.mkdtemp(prefix="clio-pg-"))
        os.chmod(self.dir, 0o755)
        self.data = self.dir / "data"
        self.port = free_port()
        if runner:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--locale=C", "--no-sync")
        self.running = False

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [*self.runner, str(self.bin / tool), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.dir)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def start(self) -> PgServer:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w", "-t", "60", "start")
        self.running = True
        return self

    def stop(self) -> None:
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.running = False

    def close(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    @staticmethod
    def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            cur = conn.execute(sql, params)  # type: ignore[arg-type]
            return list(cur.fetchall()) if cur.description is not None else []
