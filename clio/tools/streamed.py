"""Text files read as a stream of lines, bounded: what lets ``grep_search`` search a file of any
size and ``read_file`` read a line range of a file too large to load whole.

A file is read line by line with ``readline(MAX_PIECE)``: memory stays bounded by one piece, a
line longer than that comes as several pieces of the same line number (a match that spans two
pieces is not found; the pieces are 1 MB). A file is treated as binary when its first 8 KB hold a
NUL byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["MAX_PIECE", "Piece", "RangeRead", "is_binary", "lines_of", "read_range", "size_text"]

MAX_PIECE = 1 << 20
SNIFF = 8192
COUNT_CHUNK = 1 << 20
MAX_COUNT_BYTES = 1 << 30


@dataclass(frozen=True)
class Piece:
    """One line, or one piece of a line longer than ``MAX_PIECE`` bytes."""

    lineno: int
    text: str
    offset: int  # bytes read from the file before this piece


def size_text(n: int) -> str:
    """A byte count for people: ``812 B``, ``3.4 KB``, ``25.0 MB``, ``1.2 GB``."""
    if n < 1024:
        return f"{n} B"
    for unit, scale in (("KB", 1 << 10), ("MB", 1 << 20)):
        if n < scale << 10:
            return f"{n / scale:.1f} {unit}"
    return f"{n / (1 << 30):.1f} GB"


def is_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF]


def lines_of(f: BinaryIO, max_bytes: int | None = None) -> Iterator[Piece]:
    """The lines of an open binary file (decoded UTF-8, newline removed), up to ``max_bytes``."""
    lineno, offset, fresh = 0, 0, True
    while max_bytes is None or offset < max_bytes:
        raw = f.readline(MAX_PIECE)
        if not raw:
            return
        if fresh:
            lineno += 1
        fresh = raw.endswith(b"\n")
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        yield Piece(lineno, text, offset)
        offset += len(raw)


@dataclass(frozen=True)
class RangeRead:
    """Lines ``start``-``last`` of a file, and what is known of the rest."""

    body: str
    last: int  # start - 1 when nothing was read (start is past the end)
    total: int | None  # the file's line count; None when counting would read past MAX_COUNT_BYTES
    more: bool  # the limits stopped the read before the end of the range


def read_range(path: Path, start: int, end: int | None, max_lines: int, max_chars: int) -> RangeRead:
    """Lines ``start``..``end`` (1-based, inclusive; ``end=None``: as many as the limits allow).

    At most ``max_lines`` lines and ``max_chars`` characters are kept (a single longer line is cut
    and marked); the lines after the range are counted, up to ``MAX_COUNT_BYTES`` more bytes.
    """
    kept: list[str] = []
    size, last, seen, long_line = 0, start - 1, 0, False
    first: Piece | None = None  # the first piece of the last line kept
    stop: Piece | None = None  # the first piece of the line the read stopped at
    with path.open("rb") as f:
        for piece in lines_of(f):
            seen = piece.lineno
            if piece.lineno < start:
                continue
            if piece.lineno == last:  # a further piece of the line just kept
                if long_line:
                    continue
                kept[-1] += piece.text
                size += len(piece.text)
            else:
                full = len(kept) >= max_lines or (kept and size + len(piece.text) + 1 > max_chars)
                if (end is not None and piece.lineno > end) or full:
                    stop = piece
                    break
                kept.append(piece.text)
                size += len(piece.text) + 1
                first, last = piece, piece.lineno
            if size > max_chars and len(kept) > 1:  # this line does not fit after the others
                kept.pop()
                stop, last = first, last - 1
                break
            if size > max_chars:
                kept[-1], long_line = kept[-1][:max_chars], True
        total: int | None = seen
        if stop is not None:
            f.seek(stop.offset)
            total = _count_rest(f, stop.lineno - 1)
    body = "".join(line + "\n" for line in kept)
    if long_line:
        body += "[... line cut ...]\n"
    more = stop is not None and (end is None or stop.lineno <= end)
    return RangeRead(body, last, total, more)


def _count_rest(f: BinaryIO, before: int) -> int | None:
    """``before`` plus the lines from the file's position on; None past MAX_COUNT_BYTES."""
    count, read, tail = before, 0, b"\n"
    while chunk := f.read(COUNT_CHUNK):
        read += len(chunk)
        if read > MAX_COUNT_BYTES:
            return None
        count += chunk.count(b"\n")
        tail = chunk
    return count + (0 if tail.endswith(b"\n") else 1)
