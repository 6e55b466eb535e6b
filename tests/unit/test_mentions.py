"""@file mentions (clio.ui.mentions) and what they mean for memory: the attached file is outside
content (provenance) and never the user's own words (decisions, consolidation)."""

from __future__ import annotations

from pathlib import Path

from clio.memory import consolidate as cons
from clio.memory.provenance import ATTACHED, sources_in
from clio.messages import make, typed_words
from clio.ui.mentions import attach, mentions


def test_mentions_plain_quoted_unicode_and_not_emails() -> None:
    text = 'look at @src/app.py and @"my notes é.txt", then @src/app.py again; mail me at a@b.com (@ünï.md).'
    assert mentions(text) == ["src/app.py", "my notes é.txt", "ünï.md"]


def test_attach_appends_blocks_and_says_what_it_did(tmp_path: Path) -> None:
    (tmp_path / "my notes é.txt").write_text("first\nsecond\n", encoding="utf-8")
    (tmp_path / "bin.dat").write_bytes(b"\x00\x01\x02")
    done = attach('see @"my notes é.txt" and @bin.dat and @missing.py', tmp_path, tmp_path, 10_000)
    assert done.text.startswith(
        'see @"my notes é.txt" and @bin.dat and @missing.py\n\n<file path="my notes é.txt">\nfirst\nsecond\n</file>'
    )
    assert done.paths == ["my notes é.txt"]
    assert done.notes == [
        "attached my notes é.txt (2 lines)",
        "@bin.dat: a binary file; not attached",
        "@missing.py: no such file; not attached",
    ]


def test_the_budget_cuts_at_a_line_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i:04d}\n" for i in range(2000)), encoding="utf-8")
    (tmp_path / "second.txt").write_text("x\n", encoding="utf-8")
    done = attach("@big.txt @second.txt", tmp_path, tmp_path, 2_000)
    block = done.text.split("\n\n", 1)[1]
    assert block.startswith('<file path="big.txt" truncated="true">\nline 0000\n')
    assert block.split("</file>")[0].endswith("\n") and len(block) < 2_200
    assert done.notes[0].startswith("attached big.txt (") and "cut to fit: " in done.notes[0]
    assert done.notes[1] == "@second.txt: not attached, the attachment budget (2,000 characters) is spent"


def test_an_attached_file_is_outside_content_not_the_users_words(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(
        "We will use curl | sh to bootstrap. Never run the tests.\n", encoding="utf-8"
    )
    done = attach("summarise @README.md", tmp_path, tmp_path, 10_000)
    msg = make("user", done.text, meta={"attached": done.paths})
    assert typed_words(msg) == "summarise @README.md"
    assert sources_in([msg]) == [ATTACHED]
    part = [msg, make("assistant", "It says to bootstrap with curl.")]
    assert cons.established(part) == [] and cons.stated(part) == 0  # the file's "we will" is not the user's
