"""Secret redaction on one corpus (testkit/secrets_corpus.py): clio's rules against detect-secrets,
and the corpus pushed through every sink clio writes or sends.

Run: .venv/bin/python benches/bench_secrets.py [--no-e2e]
(detect-secrets must be installed in the venv: pip install detect-secrets; it is not a dependency.)

Part 1 prints, per scanner: secrets caught x/y, look-alikes damaged x/y, and MB/s (process CPU time).
detect-secrets scans files line by line: a secret counts as caught when a line it is on is flagged,
a look-alike as damaged when any of its lines is (a line-based redactor would have to drop the line).
Part 2 prints the same per sink: stored tool result, todos, session name, notes, REPL history, and,
through the installed ``clio`` against the fake server, the session archive and the outgoing request.
A secret counts as leaked when any 12 consecutive characters of it (per line) survive.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from clio.memory.notes import NoteStore
from clio.safety.redact import Redactor
from clio.store.session_names import clean_name
from clio.store.sessions import SessionStore
from clio.tools.context import Services, ToolContext
from clio.tools.results import maybe_store, read_stored
from clio.tools.todos import SPEC as TODOS
from clio.tools.todos import load_todos
from clio.ui.history import RedactingFileHistory

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)
from testkit.secrets_corpus import LOOKALIKES, LOOKALIKES_34, SECRETS, SECRETS_34, Secret, corpus_text  # noqa: E402

WINDOW = 12
_EXT = {
    "env": ".env",
    "shell": ".sh",
    "json": ".json",
    "yaml": ".yaml",
    "code": ".py",
    "log": ".log",
    "prose": ".txt",
}


def leaked(secret: str, out: str) -> bool:
    for line in secret.splitlines():
        if len(line) <= WINDOW:
            if len(line) >= 8 and line in out:
                return True
            continue
        if any(line[i : i + WINDOW] in out for i in range(len(line) - WINDOW + 1)):
            return True
    return False


# ---------------------------------------------------------------- part 1: scanners


def clio_scan(level: str) -> tuple[set[int], set[int]]:
    red = Redactor(level)
    caught = {i for i, s in enumerate(SECRETS) if not leaked(s.secret, red.redact(s.text)[0])}
    damaged = {i for i, lk in enumerate(LOOKALIKES) if red.redact(lk.text)[0] != lk.text}
    return caught, damaged


def _ds_lines(text: str, ext: str, tmp: Path) -> set[int]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    path = tmp / f"sample{ext}"
    path.write_text(text, encoding="utf-8")
    found = SecretsCollection()
    with default_settings():
        found.scan_file(str(path))
    return {s.line_number for _, s in found}


def _secret_lines(s: Secret) -> set[int]:
    first = s.text[: s.text.index(s.secret)].count("\n") + 1
    return set(range(first, first + s.secret.count("\n") + 1))


def ds_scan(tmp: Path) -> tuple[set[int], set[int]]:
    caught = {i for i, s in enumerate(SECRETS) if _ds_lines(s.text, _EXT[s.kind], tmp) & _secret_lines(s)}
    damaged = {i for i, lk in enumerate(LOOKALIKES) if _ds_lines(lk.text, ".txt", tmp)}
    return caught, damaged


def speed(fn: Callable[[str], object], text: str) -> float:
    t = time.process_time()
    fn(text)
    return len(text.encode()) / 1e6 / max(time.process_time() - t, 1e-9)


def part1() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        big = corpus_text() * 40  # ~0.6 MB
        small = corpus_text() * 4
        results = {
            "clio standard": (*clio_scan("standard"), speed(lambda t: Redactor().redact(t), big)),
            "clio strict": (*clio_scan("strict"), speed(lambda t: Redactor("strict").redact(t), big)),
        }
        try:
            ds_caught, ds_damaged = ds_scan(tmp)
        except ImportError:
            print("detect-secrets is not installed (pip install detect-secrets): its rows are left out")
        else:
            results["detect-secrets 1.5"] = (
                ds_caught,
                ds_damaged,
                speed(lambda t: _ds_lines(t, ".txt", tmp), small),
            )
            cs, cd, _ = results["clio standard"]
            results["union (standard + d-s)"] = (cs | ds_caught, cd | ds_damaged, 0.0)
    ny, nl = len(SECRETS), len(LOOKALIKES)
    known = {i for i, s in enumerate(SECRETS) if s.clio}
    print(f"corpus: {ny} secrets ({len(known)} of shapes clio has rules for), {nl} look-alikes")
    print(f"{'scanner':26} {'caught':>8} {'known':>8} {'damaged':>8} {'MB/s':>7}")
    for name, (caught, damaged, mbs) in results.items():
        rate = f"{mbs:7.2f}" if mbs else "      -"
        print(
            f"{name:26} {len(caught):>3}/{ny:<4} {len(caught & known):>3}/{len(known):<4} {len(damaged):>3}/{nl:<4} {rate}"
        )
    new_s, new_l = set(range(ny - len(SECRETS_34), ny)), set(range(nl - len(LOOKALIKES_34), nl))
    for name in ("clio standard", "clio strict"):  # the corpus before issue 34, and issue 34's own
        caught, damaged, _ = results[name]
        print(
            f"  {name}: earlier corpus caught {len(caught - new_s)}/{ny - len(new_s)}, damaged "
            f"{len(damaged - new_l)}/{nl - len(new_l)}; issue 34 corpus caught {len(caught & new_s)}/{len(new_s)}, "
            f"damaged {len(damaged & new_l)}/{len(new_l)}"
        )
    for name, (caught, damaged, _) in results.items():
        missed = sorted({SECRETS[i].label for i in set(range(ny)) - caught})
        print(
            f"  {name}: missed {', '.join(missed) or '-'}; damaged {', '.join(LOOKALIKES[i].name for i in sorted(damaged)) or '-'}"
        )


# ---------------------------------------------------------------- part 2: sinks


def _redact() -> Callable[[str], str]:
    red = Redactor()
    return lambda text: red.redact(text)[0]


def sink_result(text: str, tmp: Path) -> str:
    ctx = ToolContext(
        root=tmp, session_dir=tmp / "s", services=Services(redactor=Redactor()), result_chars=64
    )
    maybe_store(ctx, "terminal_operations", text + "\n" + "." * 200)
    (stored,) = (tmp / "s" / "results").glob("*.txt")
    body = stored.read_text(encoding="utf-8")
    page = read_stored(ctx, stored.stem, 0)  # paging reads the redacted copy
    assert page.split("\n", 1)[1] in body
    stored.unlink()
    return body[:-201]


def sink_todos(text: str, tmp: Path) -> str:
    ctx = ToolContext(root=tmp, session_dir=tmp / "t", services=Services(redactor=Redactor()))
    TODOS.dispatch(ctx, {"operation": "write", "items": [text]})
    return str(load_todos(ctx)[0]["content"])


def sink_name(text: str, tmp: Path) -> str:
    store = SessionStore(tmp / "sessions", redact=_redact())
    s = store.create("m")
    line = next((ln for ln in text.splitlines() if ln.strip()), text)
    s.rename(line)
    s.close()
    return store.info(s.id).name


def _from_line(s: Secret) -> str:
    """The text from the secret's line on (a session name is one line: the secret's line)."""
    return s.text[s.text.rfind("\n", 0, s.text.index(s.secret)) + 1 :]


def _expected(sink: str, text: str) -> str:
    """What a sink keeps of a look-alike when nothing is redacted (a name is one short line)."""
    if sink == "session name":
        return clean_name(next((ln for ln in text.splitlines() if ln.strip()), text), None)
    return text.strip() if sink == "todos.json" else text


def sink_notes(text: str, tmp: Path) -> str:
    NoteStore(tmp / "notes", redact=_redact()).store("k", text)
    note = NoteStore(tmp / "notes").retrieve("k")
    return note.value if note else ""


def sink_history(text: str, tmp: Path) -> str:
    path = tmp / "history"
    path.unlink(missing_ok=True)
    RedactingFileHistory(path, _redact()).append_string(text)
    return next(iter(RedactingFileHistory(path).load_history_strings()))


def _e2e() -> tuple[str, str] | None:
    """One clio run (-p) with the whole corpus: the archived user message and the one sent."""
    from testkit.clio_run import all_archived, run_clio
    from testkit.fakeserver import FakeServer

    text = "\n\n----\n\n".join([s.text for s in SECRETS] + [lk.text for lk in LOOKALIKES])
    server = FakeServer().start()
    try:
        with tempfile.TemporaryDirectory() as d:
            project, home = Path(d) / "proj", Path(d) / "home"
            project.mkdir()
            r = run_clio(["-p", text], server=server, project=project, home=home, timeout=120)
            if r.returncode != 0:
                print("clio run failed:", r.stderr[-500:])
                return None
            archived = str(all_archived(project)[0]["content"])
        sent = next(str(m["content"]) for m in server.chat_requests[-1]["messages"] if m["role"] == "user")
        return archived, sent
    finally:
        server.stop()


def part2(e2e: bool) -> None:
    sinks: dict[str, Callable[[str, Path], str]] = {
        "stored tool result": sink_result,
        "todos.json": sink_todos,
        "session name": sink_name,
        "notes": sink_notes,
        "REPL history": sink_history,
    }
    rows: list[tuple[str, int, int]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name, sink in sinks.items():
            caught = sum(
                not leaked(s.secret, sink(_from_line(s) if name == "session name" else s.text, tmp))
                for s in SECRETS
                if s.clio
            )
            damaged = sum(sink(lk.text, tmp) != _expected(name, lk.text) for lk in LOOKALIKES)
            rows.append((name, caught, damaged))
    if e2e:
        got = _e2e()
        if got is not None:
            for name, out in zip(("session archive", "outgoing request"), got, strict=True):
                caught = sum(not leaked(s.secret, out) for s in SECRETS if s.clio)
                damaged = sum(lk.text.strip() not in out for lk in LOOKALIKES)
                rows.append((name, caught, damaged))
    known, nl = sum(s.clio for s in SECRETS), len(LOOKALIKES)
    print(f"\nper sink (standard level; the {known} secrets of shapes clio has rules for, {nl} look-alikes)")
    print(f"{'sink':22} {'caught':>8} {'damaged':>8}")
    for name, caught, damaged in rows:
        print(f"{name:22} {caught:>3}/{known:<4} {damaged:>3}/{nl:<4}")


if __name__ == "__main__":
    part1()
    part2("--no-e2e" not in sys.argv)
