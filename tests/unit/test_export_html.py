"""HTML export: structure of the page and escaping of a hostile corpus (parsed with html.parser)."""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from clio.export.html import ARGS_LIMIT, CSP, RESULT_LIMIT, export_html, render_html

CREATED = float(calendar.timegm((2026, 11, 22, 14, 30, 5, 0, 0, 0)))  # 22 Nov 2026 14:30:05 UTC
UPDATED = float(calendar.timegm((2026, 11, 23, 9, 5, 0, 0, 0, 0)))


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


class Page(HTMLParser):
    """Every element with its attributes, the text per enclosing element, and raw style text."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self.chunks: list[tuple[set[str], str]] = []  # text with the classes of its ancestors
        self.title = ""
        self.style = ""
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attr))
        if tag not in ("meta", "br", "hr", "img", "input", "link"):
            self.stack.append((tag, attr))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        tags = [t for t, _ in self.stack]
        if "title" in tags:
            self.title += data
        elif "style" in tags:
            self.style += data
        else:
            self.texts.append(data)
            classes = {c for _, a in self.stack for c in a.get("class", "").split()}
            self.chunks.append((classes, data))

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def text_in(self, cls: str) -> str:
        return "".join(data for classes, data in self.chunks if cls in classes)

    def tags(self, name: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == name]

    def with_class(self, cls: str) -> list[dict[str, str]]:
        return [a for _, a in self.elements if cls in a.get("class", "").split()]


def call(call_id: str, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def info(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "20261122-143005-a1b2",
        "name": "Fix the parser",
        "model": "qwen2.5-coder-7b",
        "created": CREATED,
        "updated": UPDATED,
        "message_count": 7,
        "usage": {"prompt_tokens": 12345, "completion_tokens": 678},
        "cost": 0.0123,
    }
    base.update(over)
    return base


LONG_RESULT = "line of output\n" * 300 + "TAIL-MARKER-NOT-SHOWN"


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are clio. SYSTEM-MARK", "meta": {"seq": 0, "ts": CREATED}},
        {
            "role": "system",
            "content": "<thread_summary>Earlier we agreed on SUMMARY-MARK.</thread_summary>",
            "meta": {"seq": 1, "ts": CREATED + 1, "kind": "thread_summary", "thread": 2},
        },
        {
            "role": "user",
            "content": "Please read **USER-MARK** `main.py`",
            "meta": {"seq": 2, "ts": CREATED + 2},
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("call_1", "file_operations", {"operation": "read_file", "path": "src/ARG-MARK.py"})
            ],
            "meta": {"seq": 3, "ts": CREATED + 3},
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": LONG_RESULT,
            "meta": {"seq": 4, "ts": CREATED + 4},
        },
        {
            "role": "assistant",
            "content": "Here is the fix ASSISTANT-MARK:\n\n```python\ndef f(x):\n    return x + 1\n```\n",
            "meta": {"seq": 5, "ts": CREATED + 5, "redacted": 2},
        },
        {
            "role": "assistant",
            "content": "I was about to INTERRUPT-MARK",
            "meta": {"seq": 6, "ts": UPDATED, "interrupted": True},
        },
    ]


def articles(page: Page) -> list[dict[str, str]]:
    return page.tags("article")


# ------------------------------------------------------------------------------ structure


def test_header_fields(utc: None) -> None:
    page = Page(render_html(info(), conversation()))
    text = page.text
    assert "Fix the parser" in page.title
    assert [h for t, h in page.elements if t == "h1"]
    for needle in (
        "Fix the parser",
        "20261122-143005-a1b2",
        "qwen2.5-coder-7b",
        "22 Nov 2026, 14:30",
        "23 Nov 2026, 09:05",
        "12,345 prompt",
        "678 completion",
        "13,023 total",
        "$0.0123",
    ):
        assert needle in text, needle
    assert re.search(r"Messages\s*7(?!\d)", text)


def test_header_without_usage_or_cost_omits_them() -> None:
    page = Page(render_html(info(usage=None, cost=None, name=""), conversation()))
    assert "Tokens" not in page.text and "Cost" not in page.text
    assert "Untitled session" in page.title


def test_every_message_present_with_role(utc: None) -> None:
    msgs = conversation()
    page = Page(render_html(info(), msgs))
    arts = articles(page)
    assert len(arts) == len(msgs)
    roles = [a["class"].split()[1] for a in arts]
    assert roles == [m["role"] for m in msgs]
    for mark in ("SYSTEM-MARK", "SUMMARY-MARK", "USER-MARK", "ARG-MARK", "ASSISTANT-MARK", "INTERRUPT-MARK"):
        assert mark in page.text, mark
    # role names are visible text, per message
    spans = [a for a in page.with_class("role")]
    assert len(spans) == len(msgs)
    # timestamps: the first of a day carries the date, later ones the time
    assert "22 Nov 2026, 14:30:05" in page.text and "14:30:07" in page.text
    assert "23 Nov 2026, 09:05:00" in page.text


def test_summary_marked_and_unwrapped() -> None:
    html = render_html(info(), conversation())
    page = Page(html)
    summaries = [a for a in articles(page) if "summary" in a["class"].split()]
    assert len(summaries) == 1 and summaries[0]["id"] == "m1"
    assert "Thread summary" in page.text and "thread 2" in page.text
    assert "<thread_summary>" not in page.text  # wrapper tags removed, not shown escaped
    attr_form: dict[str, Any] = {
        "role": "user",
        "content": '<thread_summary n="3">\nATTR-MARK\n</thread_summary>',
    }
    attr_form["meta"] = {"kind": "thread_summary"}
    shown = Page(render_html(info(), [attr_form])).text
    assert "ATTR-MARK" in shown and "thread_summary" not in shown
    plain = Page(
        render_html(info(), [m for m in conversation() if m["meta"].get("kind") != "thread_summary"])
    )
    assert "Thread summary" not in plain.text


def test_badges_interrupted_and_redacted() -> None:
    text = Page(render_html(info(), conversation())).text
    assert "interrupted" in text
    assert "2 redacted" in text


def test_tool_call_block_labelled_with_arguments() -> None:
    html = render_html(info(), conversation())
    page = Page(html)
    assert len(page.with_class("toolcall")) == 1
    seg = page.text_in("toolcall")
    assert "file_operations" in seg and "read_file" in seg and "call_1" in seg
    assert '"path": "src/ARG-MARK.py"' in seg  # the arguments, as JSON
    # the result names the call it answers
    rtext = page.text_in("result")
    assert "file_operations" in rtext and "read_file" in rtext and "call_1" in rtext
    assert "ARG-MARK" not in rtext and "line of output" not in seg


def test_tool_result_truncated() -> None:
    page = Page(render_html(info(), conversation()))
    text = page.text
    assert "TAIL-MARKER-NOT-SHOWN" not in text
    more = len(LONG_RESULT) - RESULT_LIMIT
    assert f"… {more:,} more characters" in text
    assert LONG_RESULT[:RESULT_LIMIT] in text


def test_short_result_not_truncated_and_bad_arguments_shown_raw() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "tool_calls": [call("c9", "terminal_operations", "not json {")]},
        {"role": "tool", "tool_call_id": "c9", "content": "ok"},
    ]
    text = Page(render_html(info(), msgs)).text
    assert "not json {" in text and "more characters" not in text
    assert "terminal_operations" in text


def test_long_arguments_truncated() -> None:
    big = {"operation": "write_file", "path": "a.txt", "content": "x" * (ARGS_LIMIT * 2)}
    msgs = [{"role": "assistant", "content": None, "tool_calls": [call("c1", "file_operations", big)]}]
    text = Page(render_html(info(), msgs)).text
    assert "more characters" in text and "x" * (ARGS_LIMIT * 2) not in text


def test_markdown_rendered_and_code_highlighted() -> None:
    html = render_html(info(), conversation())
    page = Page(html)
    assert any(t == "strong" for t, _ in page.elements)  # **USER-MARK**
    figs = page.tags("figure")
    assert len(figs) == 1
    assert "python" in page.text
    # pygments split the code into classed tokens (keyword "def")
    assert re.search(r'<span class="k">def</span>', html)


def test_multimodal_and_odd_messages_do_not_crash() -> None:
    msgs: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "look PART-MARK"}, {"type": "image_url", "image_url": {}}],
        },
        {"role": "developer", "content": 42, "meta": {"ts": "yesterday", "seq": "x"}},
        {"role": "assistant", "content": None},
        {"role": "tool", "content": "\ud800 lone surrogate"},
    ]
    html = render_html(info(created=None, updated=float("nan")), msgs)
    page = Page(html)
    assert "PART-MARK" in page.text and "[image_url]" in page.text and "42" in page.text
    assert "(empty)" in page.text
    assert [a["class"].split()[1] for a in articles(page)] == ["user", "other", "assistant", "tool"]
    html.encode("utf-8")  # writable


def test_export_writes_file_atomically(tmp_path: Path) -> None:
    out = export_html(info(), conversation(), tmp_path / "sub" / "out.html")
    assert out == tmp_path / "sub" / "out.html"
    assert "ASSISTANT-MARK" in Page(out.read_text(encoding="utf-8")).text
    assert [p.name for p in out.parent.iterdir()] == ["out.html"]  # no temp files left
    in_dir = export_html(info(id="../../evil"), conversation(), tmp_path)
    assert in_dir.parent == tmp_path and in_dir.suffix == ".html"


# ------------------------------------------------------------------------------ hostile corpus

PWN = "document.body.setAttribute('data-pwned','1')"
HOSTILE = [
    f"<script>{PWN}</script>",
    f'<img src=x onerror="{PWN}">',
    "[click me](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1)) [ent](&#106;avascript:alert(1)) [sp]( javascript:alert(1))",
    "<javascript:alert(1)>",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pic](data:image/png;base64,iVBORw0KGgo=) ![remote](https://evil.example/track.png)",
    "</style><script>alert(1)</script>",
    "<!-- unterminated comment",
    "<svg onload=alert(1)><circle/></svg>",
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "<object data=x></object><embed src=x>",
    '<a href="javascript:alert(1)" onclick="x()">raw link</a>',
    "<base href='https://evil.example/'><link rel=stylesheet href='https://evil.example/x.css'>",
    "<meta http-equiv=refresh content='0;url=https://evil.example'>",
    '[t](https://ok.example "title\\" onmouseover=\\"alert(1))',
    '<div style="background:url(https://evil.example/x)">styled</div>',
]
HOSTILE_NAME = f"\"><script>{PWN}</script><title x='"
HOSTILE_LANG = f'"><script>{PWN}</script>'


def hostile_messages() -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": text} for text in HOSTILE]
    msgs.append({"role": "assistant", "content": f"```{HOSTILE_LANG}\nprint(1)\n```\n"})
    msgs.append(
        {"role": "assistant", "content": '```python onload=alert(1) "><img src=x onerror=alert(1)>\nx\n```'}
    )
    msgs.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": '"><script>alert(1)</script>',
                    "type": "function",
                    "function": {
                        "name": f'<img src=x onerror="{PWN}">',
                        "arguments": json.dumps(
                            {"operation": "</pre><script>alert(1)</script>", "path": "<svg onload=x>"}
                        ),
                    },
                }
            ],
        }
    )
    msgs.append(
        {
            "role": "tool",
            "tool_call_id": '"><script>alert(1)</script>',
            "content": "<script>alert(2)</script>",
        }
    )
    msgs.append(
        {"role": '"><script>alert(1)</script>', "content": "odd role", "meta": {"kind": "<b onmouseover=x>"}}
    )
    return msgs


def hostile_page() -> tuple[str, Page]:
    html = render_html(
        info(name=HOSTILE_NAME, model="<script>m</script>", id="<i>id</i>"), hostile_messages()
    )
    return html, Page(html)


def test_no_live_markup_from_hostile_corpus() -> None:
    _, page = hostile_page()
    tags = {t for t, _ in page.elements}
    for bad in ("script", "iframe", "object", "embed", "svg", "img", "base", "link", "form", "frame", "math"):
        assert bad not in tags, bad
    assert "i" not in tags and "b" not in tags  # raw inline tags never become elements
    for tag, attrs in page.elements:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name != "srcdoc"
            if name in ("href", "src", "action", "formaction", "xlink:href"):
                assert re.match(r"(https?:|mailto:)", value.strip(), re.I), (tag, name, value)
    assert len(page.tags("style")) == 1 and len(page.tags("title")) == 1
    assert len(page.tags("meta")) == 4  # charset, CSP, referrer, viewport: nothing injected


def test_hostile_text_is_shown_escaped_not_dropped() -> None:
    _, page = hostile_page()
    text = page.text
    for needle in (
        f"<script>{PWN}</script>",
        "<svg onload=alert(1)>",
        "<!-- unterminated comment",
        "</style>",
    ):
        assert needle in text, needle
    assert HOSTILE_NAME in page.title and HOSTILE_NAME in text
    assert HOSTILE_LANG in text  # the fence language is shown as a caption
    assert "</pre><script>alert(1)</script>" in text  # tool operation label


def test_links_only_safe_schemes() -> None:
    _, page = hostile_page()
    hrefs = [a["href"] for a in page.tags("a")]
    assert hrefs, "the safe https links should still be links"
    assert all(h.startswith(("https://", "http://", "mailto:")) for h in hrefs)
    assert "https://evil.example/track.png" in hrefs  # a remote image became a plain link, not an <img>
    assert "javascript" in page.text  # the rejected links stay visible as text
    ok = Page(
        render_html(
            info(),
            [{"role": "user", "content": "[a](https://x.example) [m](mailto:a@b.c) [r](../etc/passwd)"}],
        )
    )
    assert [a["href"] for a in ok.tags("a")] == ["https://x.example", "mailto:a@b.c"]


def test_csp_meta_and_no_network_resources() -> None:
    html, page = hostile_page()
    csp = [m for m in page.tags("meta") if m.get("http-equiv", "").lower() == "content-security-policy"]
    assert len(csp) == 1 and csp[0]["content"] == CSP
    assert "script-src" not in csp[0]["content"]
    # the CSP comes before any content that could matter
    assert html.index("Content-Security-Policy") < html.index("<title>")
    for _, attrs in page.elements:
        assert "src" not in attrs and "srcset" not in attrs and "style" not in attrs
    assert not page.tags("link")
    assert not re.search(r"url\(|@import|@font-face|https?:", page.style, re.I)
    # outside <a href>, no http(s) reference exists in any attribute
    for tag, attrs in page.elements:
        for name, value in attrs.items():
            if re.search(r"https?:", value, re.I):
                assert tag == "a" and name == "href"


def test_style_block_cannot_be_closed_from_content() -> None:
    html, _ = hostile_page()
    assert html.count("</style>") == 1 and html.count("<style>") == 1
    assert html.count("<script") == 0 and html.count("<!--") == 0


def test_clios_notes_are_clios_and_an_interrupted_answer_is_marked() -> None:
    """Issue 35 item 4: an /undo's note is shown as clio's, apart from the user's words; clio's
    own prompt sent in the user's role is labelled clio's; a cut-off answer says so."""
    from clio.messages import make, prompt_meta, with_notes

    meta: dict[str, Any] = {}
    text = with_notes("rename it", ["[clio: the user ran /undo; a.py (restored).]"], meta)
    msgs = [
        make("user", text, meta=meta),
        make("assistant", "half of the answ", meta={"interrupted": True}),
        make("user", "Write the project's instructions file.", meta=prompt_meta("init")),
    ]
    page = render_html({"id": "s1"}, msgs)
    articles = re.findall(r"<article .*?</article>", page, re.S)
    user, answer, prompt = articles
    notes = re.search(r'<div class="clio-notes">(.*?)</div>', user, re.S)
    assert notes and "clio:" in notes.group(1) and "the user ran /undo; a.py (restored)." in notes.group(1)
    content = re.search(r'<div class="content">(.*?)</div>', user, re.S)
    assert content and "rename it" in content.group(1) and "undo" not in content.group(1)
    assert "interrupted: the user cut this answer off here" in answer
    assert '<span class="role">clio</span>' in prompt and "sent as the user" in prompt
    assert '<span class="role">user</span>' in user


def test_long_text_is_cut_between_words_and_never_wrapped_inside_one() -> None:
    from clio.export.css import stylesheet
    from clio.export.html import truncate

    text = "editing " * 400
    shown, more = truncate(text, 2001)
    assert shown.endswith("editing ") and len(shown) + more == len(text)
    assert truncate("x" * 3000, 2000) == ("x" * 2000, 1000)  # one word that long: cut where it must
    assert "overflow-wrap: anywhere" not in stylesheet()  # a word is broken only when alone too wide
