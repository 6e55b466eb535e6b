"""The stylesheet of an exported session (inlined in the page: no fonts, no network).

System font stacks only; code colours come from one pygments stylesheet scoped to
``.hl`` (light) with a dark variant under ``prefers-color-scheme: dark``.
"""

from __future__ import annotations

import functools
import re

from pygments.formatters import HtmlFormatter

LIGHT_CODE_STYLE = "friendly"
DARK_CODE_STYLE = "github-dark"
_COMMENT = re.compile(r"\s*/\*.*?\*/")

BASE_CSS = """
:root {
  --bg: #f4f5f7; --fg: #1d2127; --muted: #5c6570; --card: #ffffff; --line: #dde1e6;
  --user: #2563eb; --user-bg: #eef3ff; --assistant: #15803d; --tool: #6b7280; --tool-bg: #f3f4f6;
  --system: #a16207; --system-bg: #fdf8ec; --summary: #7c3aed; --summary-bg: #f5f0ff;
  --danger: #b91c1c; --code-bg: #f6f8fa; --link: #1d4ed8;
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #15171b; --fg: #e4e7eb; --muted: #9aa3ad; --card: #1e2126; --line: #343a42;
    --user: #7aa2ff; --user-bg: #1b2436; --assistant: #4ade80; --tool: #9ca3af; --tool-bg: #22262c;
    --system: #facc15; --system-bg: #2a2618; --summary: #c4a5ff; --summary-bg: #261f36;
    --danger: #f87171; --code-bg: #0d1117; --link: #8ab4ff;
  }
}
* { box-sizing: border-box; }
html { background: var(--bg); }
body {
  margin: 0; padding: 24px 16px 48px; color: var(--fg); background: var(--bg);
  font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans",
    "Liberation Sans", Arial, sans-serif;
}
main { max-width: 940px; margin: 0 auto; }
a { color: var(--link); }
code, pre, kbd, .mono {
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono",
    "Liberation Mono", monospace;
}
header.session {
  background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 22px; margin-bottom: 22px;
}
header.session .app { margin: 0 0 2px; color: var(--muted); font-size: 13px;
  letter-spacing: .06em; text-transform: uppercase; }
header.session h1 { margin: 0 0 12px; font-size: 24px; line-height: 1.25; overflow-wrap: break-word; }
header.session dl {
  display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; font-size: 14.5px;
}
header.session dt { color: var(--muted); }
header.session dd { margin: 0; overflow-wrap: break-word; }
header.session .when { color: inherit; margin: 0; }
article.msg {
  background: var(--card); border: 1px solid var(--line); border-left: 4px solid var(--tool);
  border-radius: 8px; padding: 10px 18px 12px; margin: 0 0 14px;
}
article.msg > .head {
  display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px; margin-bottom: 4px; font-size: 13px;
}
.role {
  font-weight: 700; text-transform: uppercase; letter-spacing: .06em; font-size: 12.5px;
}
.when { color: var(--muted); margin-left: auto; font-variant-numeric: tabular-nums; }
.badge {
  display: inline-block; padding: 0 8px; border-radius: 999px; font-size: 12px; font-weight: 600;
  border: 1px solid currentColor;
}
.badge.warn { color: var(--danger); }
.badge.info { color: var(--muted); }
.badge.summary { color: var(--card); background: var(--summary); border-color: var(--summary); }
article.user { border-left-color: var(--user); background: var(--user-bg); }
article.user .role { color: var(--user); }
article.assistant { border-left-color: var(--assistant); }
article.assistant .role { color: var(--assistant); }
article.system { border-left-color: var(--system); background: var(--system-bg); }
article.system .role { color: var(--system); }
article.tool { border-left-color: var(--tool); background: var(--tool-bg); padding-bottom: 10px; }
article.tool .role { color: var(--tool); }
article.summary {
  border: 2px dashed var(--summary); border-left: 6px solid var(--summary); background: var(--summary-bg);
}
article.summary .role { color: var(--summary); }
.content { overflow-wrap: break-word; }
.clio-notes { margin: 2px 0 6px; color: var(--muted); font-size: 13.5px; overflow-wrap: break-word; }
.clio-notes p { margin: 2px 0; }
.clio-notes .who { font-weight: 700; margin-right: 6px; }
.cut { color: var(--danger); font-size: 13px; margin: 6px 0 0; }
.content > :first-child { margin-top: 4px; }
.content > :last-child { margin-bottom: 2px; }
.content p { margin: 8px 0; }
.content h1, .content h2, .content h3, .content h4, .content h5, .content h6 {
  margin: 14px 0 6px; line-height: 1.3;
}
.content h1 { font-size: 1.3em; } .content h2 { font-size: 1.2em; } .content h3 { font-size: 1.1em; }
.content h4, .content h5, .content h6 { font-size: 1em; }
.content blockquote { margin: 8px 0; padding: 2px 14px; border-left: 3px solid var(--line); color: var(--muted); }
.content ul, .content ol { padding-left: 26px; margin: 8px 0; }
.content table { border-collapse: collapse; margin: 10px 0; font-size: 14.5px; }
.content th, .content td { border: 1px solid var(--line); padding: 4px 10px; text-align: left; }
.content th { background: var(--code-bg); }
.content hr { border: 0; border-top: 1px solid var(--line); }
.content :not(pre) > code {
  background: var(--code-bg); border: 1px solid var(--line); border-radius: 4px;
  padding: 0 3px; font-size: .88em;
}
figure.code { margin: 10px 0; border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
figure.code figcaption {
  font: 600 11.5px/1.2 system-ui, sans-serif; color: var(--muted); background: var(--code-bg);
  border-bottom: 1px solid var(--line); padding: 5px 10px; letter-spacing: .04em;
}
pre {
  margin: 0; padding: 10px 12px; background: var(--code-bg); font-size: 13.5px; line-height: 1.45;
  overflow-x: auto; white-space: pre; tab-size: 4;
}
.content > pre { border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; }
.toolcall { margin: 10px 0 4px; border: 1px solid var(--line); border-radius: 6px; overflow: hidden;
  background: var(--card); }
.toolcall .label, .result .label {
  display: flex; gap: 8px; align-items: baseline; padding: 5px 10px; font-size: 13px;
  background: var(--tool-bg); border-bottom: 1px solid var(--line);
}
.toolcall .label .name, .result .label .name { font-weight: 700; }
.toolcall .label .op, .result .label .op { color: var(--assistant); font-weight: 600; }
.toolcall .label .callid, .result .label .callid { margin-left: auto; color: var(--muted); font-size: 11.5px; }
.label .note { color: var(--danger); font-size: 12px; }
.toolcall pre, .result pre { font-size: 12.5px; max-height: 340px; overflow: auto; white-space: pre-wrap;
  overflow-wrap: break-word; }
.result { border: 1px solid var(--line); border-radius: 6px; overflow: hidden; margin-top: 4px; }
.diff .add { color: #1a7f37; } .diff .del { color: #cf222e; } .diff .hunk { color: #0969da; }
.diff .file { font-weight: 700; }
.more { display: block; color: var(--muted); font-style: italic; margin-top: 6px; white-space: normal;
  font-family: system-ui, sans-serif; }
details > summary { cursor: pointer; color: var(--muted); font-size: 14px; }
.empty { color: var(--muted); font-style: italic; }
footer { color: var(--muted); font-size: 12.5px; text-align: center; margin-top: 26px; }
@media print {
  body { background: #fff; padding: 0; }
  article.msg { break-inside: avoid-page; }
  .toolcall pre, .result pre { max-height: none; }
}
"""


@functools.lru_cache(maxsize=1)
def stylesheet() -> str:
    """The page CSS plus the pygments rules for ``.hl`` code blocks (light and dark)."""
    light = _token_rules(LIGHT_CODE_STYLE)
    dark = _token_rules(DARK_CODE_STYLE)
    return f"{BASE_CSS}\n{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"


def _token_rules(style: str) -> str:
    # Only the token colours scoped to .hl: the page keeps its own <pre> background and
    # line height, and lexer error tokens (common in snippets) get no red box.
    lines = HtmlFormatter(style=style).get_token_style_defs(".hl")
    return "\n".join(_COMMENT.sub("", line) for line in lines if not line.startswith(".hl .err"))
