"""Markdown to safe HTML for the session export: CommonMark with raw HTML disabled, links limited
to http/https/mailto, images shown as plain links (a page loads nothing from the network), code
fences highlighted by pygments (which escapes). :func:`esc` escapes any other string."""

from __future__ import annotations

import functools
import html
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.renderer import RendererProtocol
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

ALLOWED_LINK_PREFIXES = ("http://", "https://", "mailto:")


def esc(value: object) -> str:
    """Escape any value for text or a quoted attribute."""
    return html.escape(str(value), quote=True)


def safe_link(url: str) -> bool:
    """True only for http(s) and mailto URLs (controls and spaces ignored when checking)."""
    squeezed = "".join(ch for ch in url if ch > " " and ch != "\x7f").lower()
    return squeezed.startswith(ALLOWED_LINK_PREFIXES)


def _highlighted(code: str, lang: str) -> str:
    lexer = None
    if lang and len(lang) <= 64:
        try:
            lexer = get_lexer_by_name(lang.lower())
        except ClassNotFound:
            lexer = None
    if lexer is None:
        return esc(code)
    return str(highlight(code, lexer, HtmlFormatter(nowrap=True)))


def code_block(code: str, lang: str = "") -> str:
    caption = f"<figcaption>{esc(lang[:64])}</figcaption>" if lang else ""
    return f'<figure class="code">{caption}<pre class="hl"><code>{_highlighted(code, lang)}</code></pre></figure>\n'


def _fence(
    self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    info = unescapeAll(tokens[idx].info).strip()
    lang = info.split(maxsplit=1)[0] if info else ""
    return code_block(tokens[idx].content, lang)


def _indented_code(
    self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return code_block(tokens[idx].content)


def _image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    # No <img>: a remote image would be a network request. Show a plain link instead.
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = str(token.attrGet("src") or "")
    label = f"[image: {esc(alt)}]"
    if not safe_link(src):
        return label
    return f'<a href="{esc(src)}" rel="noopener noreferrer nofollow">{label}</a>'


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return str(self.renderToken(tokens, idx, options, env))


@functools.lru_cache(maxsize=1)
def markdown() -> MarkdownIt:
    """CommonMark + tables + strikethrough, raw HTML off, links limited to http/https/mailto."""
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _indented_code)
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


def render_markdown(text: str) -> str:
    return markdown().render(text)
