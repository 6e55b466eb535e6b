"""The HTML export opened in real headless Chromium: injected scripts do not run; a screenshot is kept.

Needs Debian's ``chromium`` (scripts/install-chromium.sh); skipped when it is missing.
Every check that "a script did not run" has a control that shows the same script
does run in the same browser when the page is unsafe, so the checks cannot pass vacuously.
"""

from __future__ import annotations

import calendar
import json
import os
import shutil
import signal
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from clio.export.html import CSP, export_html, render_html


def _find_chromium() -> str | None:
    for name in (os.environ.get("CLIO_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM = _find_chromium()
ARTIFACTS = Path(__file__).parent / "artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="chromium not installed: run scripts/install-chromium.sh (or set CLIO_CHROMIUM)",
    ),
]


def chromium(profile: Path, page: Path, *extra: str) -> str:
    """Run headless Chromium on a local file; returns stdout. Kills the whole process group on timeout."""
    assert CHROMIUM is not None
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, err[-2000:]
    return out


def dump_dom(tmp_path: Path, html: str, name: str) -> str:
    page = tmp_path / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    dom = chromium(tmp_path / f"profile-{name}", page, "--dump-dom")
    assert "<body" in dom, "chromium printed no DOM"
    return dom


class BodyAttrs(HTMLParser):
    def __init__(self, dom: str) -> None:
        super().__init__()
        self.body: dict[str, str] = {}
        self.scripts = 0
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self.body = {k: v or "" for k, v in attrs}
        elif tag == "script":
            self.scripts += 1


def pwned(dom: str) -> set[str]:
    return {k for k in BodyAttrs(dom).body if k.startswith("data-pwned")}


def pwn(tag: str) -> str:
    return f"document.body.setAttribute('data-pwned-{tag}','1')"


PAYLOAD = f'<script>{pwn("script")}</script><img src=x onerror="{pwn("onerror")}">'
CREATED = float(calendar.timegm((2026, 11, 22, 14, 30, 0, 0, 0, 0)))


def hostile_session() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    info = {
        "id": "20261122-143000-beef",
        "name": f'"><script>{pwn("name")}</script>',
        "model": f'<img src=x onerror="{pwn("model")}">',
        "created": CREATED,
        "updated": CREATED + 600,
        "message_count": 6,
    }
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": f"HOSTILE-START {PAYLOAD}", "meta": {"ts": CREATED}},
        {"role": "user", "content": f'<svg onload="{pwn("svg")}"></svg>', "meta": {"ts": CREATED + 1}},
        {
            "role": "assistant",
            "content": f'<iframe srcdoc="<script>{pwn("iframe").replace("document", "parent.document")}</script>">'
            f'</iframe>\n\n```"><script>{pwn("lang")}</script>\nx = 1\n```\n[x](javascript:{pwn("link")})',
            "meta": {"ts": CREATED + 2},
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": f"<script>{pwn('toolname')}</script>",
                        "arguments": json.dumps({"operation": "read_file", "path": f"</pre>{PAYLOAD}"}),
                    },
                }
            ],
            "meta": {"ts": CREATED + 3},
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": f"</pre></div>{PAYLOAD}",
            "meta": {"ts": CREATED + 4},
        },
        {"role": "assistant", "content": "HOSTILE-END", "meta": {"ts": CREATED + 5}},
    ]
    return info, msgs


def test_control_unsafe_page_does_run_the_script(tmp_path: Path) -> None:
    # Built here, not by clio: proves this browser runs both payloads and the check can fail.
    unsafe = f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>unsafe</title></head><body><p>hi</p>{PAYLOAD}</body></html>'
    assert pwned(dump_dom(tmp_path, unsafe, "control")) == {"data-pwned-script", "data-pwned-onerror"}


def test_exported_page_runs_no_injected_script(tmp_path: Path) -> None:
    info, msgs = hostile_session()
    out = export_html(info, msgs, tmp_path / "export.html")
    dom = chromium(tmp_path / "profile", out, "--dump-dom")
    assert "HOSTILE-START" in dom and "HOSTILE-END" in dom  # the page rendered, every message in it
    assert pwned(dom) == set()
    assert BodyAttrs(dom).scripts == 0


def test_csp_alone_stops_a_script_that_slipped_through(tmp_path: Path) -> None:
    # Simulate an escaping bug: raw payload spliced into clio's page. The CSP must stop it;
    # the same page without the CSP meta runs it (control).
    info, msgs = hostile_session()
    page = render_html(info, msgs).replace("<body>", f"<body>{PAYLOAD}", 1)
    assert PAYLOAD in page
    csp_meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    assert csp_meta in page
    assert pwned(dump_dom(tmp_path, page, "with-csp")) == set()
    without = page.replace(csp_meta, "")
    assert pwned(dump_dom(tmp_path, without, "without-csp")) == {"data-pwned-script", "data-pwned-onerror"}


def readable_session() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    info = {
        "id": "20261122-143000-a1b2",
        "name": "Fix the off-by-one in the tokenizer",
        "model": "qwen2.5-coder-7b-instruct",
        "created": CREATED,
        "updated": CREATED + 1800,
        "message_count": 8,
        "usage": {"prompt_tokens": 18432, "completion_tokens": 2210},
        "cost": 0.0421,
    }
    code = "def window(tokens, size):\n    # keep the last `size` tokens\n    return tokens[-size:] if size else []\n"
    msgs: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "<thread_summary>The user is fixing `tokenizer.py`; tests in `tests/test_tok.py` "
            "fail on empty input. Agreed: no new dependencies.</thread_summary>",
            "meta": {"ts": CREATED, "kind": "thread_summary", "thread": 1},
        },
        {
            "role": "user",
            "content": "The window is one token short. Can you **fix** `window()`?",
            "meta": {"ts": CREATED + 30},
        },
        {
            "role": "assistant",
            "content": "Let me look at the function first.",
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {
                        "name": "file_operations",
                        "arguments": json.dumps({"operation": "read_file", "path": "clio/tokenizer.py"}),
                    },
                }
            ],
            "meta": {"ts": CREATED + 35},
        },
        {
            "role": "tool",
            "tool_call_id": "call_7",
            "content": "".join(f"{i:4d}  line {i} of tokenizer.py\n" for i in range(1, 200)),
            "meta": {"ts": CREATED + 36},
        },
        {
            "role": "assistant",
            "content": f"Found it: the slice drops one token when `size` is 0.\n\n```python\n{code}```\n\n"
            "| case | before | after |\n|---|---|---|\n| size=0 | all | none |\n| size=3 | 3 | 3 |\n",
            "meta": {"ts": CREATED + 60, "redacted": 1},
        },
        {
            "role": "user",
            "content": f"Also, this showed up in a file: {PAYLOAD} (should be harmless text)",
            "meta": {"ts": CREATED + 120},
        },
        {
            "role": "assistant",
            "content": "Running the tests now, then I will",
            "meta": {"ts": CREATED + 125, "interrupted": True},
        },
    ]
    return info, msgs


def png_size_and_pixels(data: bytes) -> tuple[int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_screenshot_artifact(tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    info, msgs = readable_session()
    page = export_html(info, msgs, ARTIFACTS / "export.html")
    shot = ARTIFACTS / "export.png"
    shot.unlink(missing_ok=True)
    chromium(tmp_path / "profile", page, f"--screenshot={shot}", "--window-size=1200,1600")
    width, height, pixels = png_size_and_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    assert len(set(pixels)) > 32, "screenshot looks blank"
    dom = chromium(tmp_path / "profile2", page, "--dump-dom")
    assert pwned(dom) == set() and "should be harmless text" in dom
