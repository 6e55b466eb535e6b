"""Which deployment environment a question singles out, production or one before it (staging, a
test or demo environment, a sandbox, UAT, pre-production), and whether a unit speaks of that one.
"what's the schema registry address in production?" is the near miss of the session that settled
staging's: the same words, a cosine of 0.79, and the wrong answer; "what port does the bank's SFTP
use in their test environment?" is the near miss of the session that settled production's. A
question that names an environment before production alone is answered by a unit that names one
(a value particular to it is stated as its own). The environments before production are one kind:
a question may call staging "pre-prod" or "the test environment" (a rewording does), so which of
them the unit names is the reader's to judge. One that names production alone is not answered by a
unit that speaks of staging and never of production (a unit that names no environment may be
production's: the default, often unnamed). A question that names both reads every unit unless it
sets one beside the other ("is staging backed up at all, or only prod?", "same pool size as
prod?": it asks about the one not set beside); one that names neither reads every unit. "test",
"dev", "demo" and "sandbox" name an environment only before a word of deployment ("test
environment", "dev cluster", "demo tenant", "sandbox account"); "demo" and "sandbox" also at a
clause's end ("on the demo?"): "the test db", "the dev database" and "the sandbox project" are
none. The automatic recall's decision reads it for every unit it would quote
(:attr:`clio.recall.auto.Hit.elsewhere`); measured in docs/memory.md ("The environment a question
singles out"). Pure; patterns compiled on first use.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy
from clio.recall.answer_kind import SCANNED  # a unit read as far as the answer kind reads it

PRODUCTION, BEFORE_PRODUCTION = "production", "before production"

# "test", "dev", "demo" or "sandbox" names an environment only before one of these ("the test db"
# is the test suite's, "the sandbox project" a project's); "demo" and "sandbox" also at a clause's end
_DEPLOYED = r"(?:env|envs|environments?|gateway|instance|cluster|tenant|account|realm|stack|system|site|endpoint)"
_NAMES = {
    PRODUCTION: lazy(r"\b(?<!pre-)(?<!pre )(?:prod|production|prd)\b", re.I),  # not "pre-prod"
    BEFORE_PRODUCTION: lazy(
        r"\b(?:staging|stg|uat|pre-?prod(?:uction)?|test-?env)\b"  # "values-staging.yaml" too
        rf"|\btest(?:ing)?[\s-]+{_DEPLOYED}\b|\bdev(?:elopment)?[\s-]+(?:envs?|environments?|cluster|stack|tenant)\b"
        rf"|\b(?:demo|sandbox(?:es)?)(?:[\s-]+{_DEPLOYED}\b|(?=\s*(?:[?.,;:!)]|$)))",
        re.I,
    ),
}
# what counts against production in a unit: staging named (a test or demo environment beside
# production's value is often only a note)
_STAGING = lazy(r"\b(?:staging|stg)\b", re.I)
_SENTENCE_END = lazy(r"[.!;](?=\s)|\n")
# what sets an environment beside the one asked about, just before its name: "same ... as", "like",
# "unlike", "than", "or only", "not", "rather than", "as opposed to", "instead of", "other than",
# "apart from", "besides"; a few small words may stand between ("same 02:00 schedule as in prod")
_BESIDE = lazy(
    r"(?:\bsame\b(?:\W+[\w:.%-]+){0,4}?\W+as|(?<!\bi\s)(?<!\bwe\s)(?<!\byou\s)(?<!they\s)(?<!would\s)(?<!'d\s)\blike"
    r"|\bunlike|\bthan|\bor\s+(?:only|just)|\bnot|\bas\s+opposed\s+to|\binstead\s+of|\bapart\s+from|\bbesides)"
    r"(?:\s+(?:the|in|on|for|at|with|to|our|its|what|was|is))*\s+$",
    re.I,
)
QUESTION_CHARS = 600  # of a question read (a follow-up carries its task after it)


def singled_out(question: str) -> str | None:
    """:data:`PRODUCTION` or :data:`BEFORE_PRODUCTION` when ``question`` names that kind and not the
    other, else None. Its first line speaks first: a follow-up read with its task ("and in
    production?" under "what's the registry address in staging?") asks about the one it names.
    Where it names both, the sentence of its first question mark decides if it names one: "what's
    the schema registry address in prod? I only have the staging one" asks about production. Else,
    where every mention of one is set beside the other (:func:`beside_only`), the other is asked:
    "is the staging clickhouse backed up at all, or only prod?" asks about staging."""
    head = question[:QUESTION_CHARS]
    for text in (head.partition("\n")[0], head):
        named = named_in(text)
        if len(named) > 1:
            asked = named_in(first_question(head))
            if len(asked) == 1:
                return asked[0]
            asked = [env for env in named if not beside_only(env, text)]
            return asked[0] if len(asked) == 1 else None
        if named:
            return named[0]
    return None


def named_in(text: str) -> list[str]:
    """The environments ``text`` names, production first."""
    return [env for env, pattern in _NAMES.items() if pattern.search(text)]


def beside_only(env: str, text: str) -> bool:
    """Whether every mention of ``env`` in ``text`` is set beside another environment ("... same
    as prod", "... like staging", "not staging"), so that it is not the one asked about."""
    return all(_BESIDE.search(text, max(0, m.start() - 60), m.start()) for m in _NAMES[env].finditer(text))


def first_question(text: str) -> str:
    """The sentence that ends at ``text``'s first question mark ("" without one): from the end of
    the sentence before it (a full stop, an exclamation mark or a semicolon before a space, or a
    new line; "2.12" ends nothing)."""
    mark = text.find("?")
    if mark < 0:
        return ""
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, mark)]
    return text[ends[-1] if ends else 0 : mark + 1]


def speaks_of(env: str | None, unit: str) -> bool:
    """Whether ``unit`` could be about ``env`` (always, for None): for an environment before
    production, it names one; for production, it names production or does not speak of staging."""
    if env is None:
        return True
    text = unit[:SCANNED]
    if env == BEFORE_PRODUCTION:
        return _NAMES[BEFORE_PRODUCTION].search(text) is not None
    return _NAMES[PRODUCTION].search(text) is not None or _STAGING.search(text) is None
