"""clio's secret rules against gitleaks' default ruleset, on one corpus (testkit/secrets_corpus.py).

Run: .venv/bin/python benches/bench_gitleaks.py PATH/TO/gitleaks.toml
(gitleaks' ``config/gitleaks.toml``, MIT licence: ``git clone https://github.com/gitleaks/gitleaks``).

gitleaks' regexes are Go RE2; they are compiled with Python's ``re`` after two translations (an
inline ``(?i)`` in mid-pattern makes the whole pattern case-insensitive; ``\\z`` becomes ``\\Z``),
rules that do not compile are counted and skipped. Lenient to gitleaks: its allow-lists, entropy
thresholds and keyword prefilters are not applied, so it can only catch more and damage more
than it would. A secret counts as caught when a match overlaps it in its text; a look-alike as
damaged when any rule matches in it. Prints a table and the shapes only one side catches; no asserts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.safety.redact import Redactor  # noqa: E402
from testkit.secrets_corpus import LOOKALIKES, SECRETS  # noqa: E402


def load(path: Path) -> tuple[list[tuple[str, re.Pattern[str]]], int]:
    import tomllib  # Python 3.11+

    rules, bad = [], 0
    for rule in tomllib.loads(path.read_text(encoding="utf-8")).get("rules", []):
        pattern = rule.get("regex")
        if not pattern:
            continue
        flags = 0
        if "(?i)" in pattern[1:]:
            pattern, flags = pattern.replace("(?i)", ""), re.I
        pattern = pattern.replace(r"\z", r"\Z")
        try:
            rules.append((rule["id"], re.compile(pattern, flags)))
        except re.error:
            bad += 1
    return rules, bad


def gitleaks_hits(rules: list[tuple[str, re.Pattern[str]]], text: str) -> list[tuple[str, int, int]]:
    return [(rid, m.start(), m.end()) for rid, rx in rules for m in rx.finditer(text)]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rules, bad = load(Path(sys.argv[1]))
    red = Redactor("standard")
    rows = {"clio standard": [0, 0], "gitleaks (regexes only)": [0, 0], "union": [0, 0]}
    only: dict[str, list[str]] = {"clio": [], "gitleaks": []}
    for s in SECRETS:
        out = red.redact(s.text)[0]
        clio = not any(s.secret[i : i + 12] in out for i in range(0, max(1, len(s.secret) - 11)))
        at = s.text.find(s.secret[:12])
        gl = any(a < at + len(s.secret) and at < b for _, a, b in gitleaks_hits(rules, s.text)) if at >= 0 else False
        rows["clio standard"][0] += clio
        rows["gitleaks (regexes only)"][0] += gl
        rows["union"][0] += clio or gl
        if clio != gl:
            only["clio" if clio else "gitleaks"].append(s.label)
    for lk in LOOKALIKES:
        c = red.redact(lk.text)[0] != lk.text
        g = bool(gitleaks_hits(rules, lk.text))
        rows["clio standard"][1] += c
        rows["gitleaks (regexes only)"][1] += g
        rows["union"][1] += c or g
        if g:
            only.setdefault("gitleaks damages", []).append(lk.name)
    print(f"gitleaks rules compiled: {len(rules)} ({bad} skipped: RE2 syntax Python lacks)\n")
    print("| scanner | secrets caught | look-alikes damaged |\n|---|---|---|")
    for name, (caught, damaged) in rows.items():
        print(f"| {name} | {caught}/{len(SECRETS)} | {damaged}/{len(LOOKALIKES)} |")
    for who, labels in only.items():
        print(f"\nonly {who}: {', '.join(sorted(set(labels))) or '-'}")


if __name__ == "__main__":
    main()
