"""What tokens cost: a small built-in price table (dated) and the user's own ``prices:``.

Prices are US dollars per million tokens: input (prompt tokens not read from the provider's
cache), output (completion tokens) and cached input. A model matches a table entry by name,
after any provider prefix (``openai/gpt-4o`` -> ``gpt-4o``), or with a date or version suffix
(``gpt-4o-2024-08-06``, ``claude-sonnet-4-20250514``); the longest entry wins (``gpt-4o-mini``
before ``gpt-4o``). The table holds providers' list prices, so it applies only where requests go
to a provider that charges them (:data:`PRICED_HOSTS`: OpenAI, the default endpoint, Anthropic,
DeepSeek, OpenRouter): a server on this machine (``llama-server --alias gpt-4o-mini``) or any other
endpoint gets no price from it. A model neither table covers has no price: clio then shows tokens
only, never a guess. The user's ``prices:`` (``$CLIO_HOME/config.yaml``) wins over the table, on
any endpoint::

    prices:
      my-model: {input: 0.5, output: 1.5, cached: 0.05}

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

PRICES_DATE = "2025-08"  # when the built-in list prices were read from the providers' pages

# model -> (input, output, cached input), USD per million tokens
BUILTIN: dict[str, tuple[float, float, float]] = {
    "gpt-5": (1.25, 10.0, 0.125),
    "gpt-5-mini": (0.25, 2.0, 0.025),
    "gpt-5-nano": (0.05, 0.40, 0.005),
    "gpt-4.1": (2.0, 8.0, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "gpt-4o": (2.50, 10.0, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "o3": (2.0, 8.0, 0.50),
    "o3-mini": (1.10, 4.40, 0.55),
    "o4-mini": (1.10, 4.40, 0.275),
    "claude-opus-4": (15.0, 75.0, 1.50),
    "claude-sonnet-4": (3.0, 15.0, 0.30),
    "claude-3-5-haiku": (0.80, 4.0, 0.08),
    "deepseek-chat": (0.27, 1.10, 0.07),
}


# hosts (and their subdomains) whose bills follow the built-in list prices
PRICED_HOSTS = ("api.openai.com", "api.anthropic.com", "api.deepseek.com", "openrouter.ai")


def lists_prices(endpoint: str | None) -> bool:
    """Whether the built-in table applies to requests sent to ``endpoint`` (None: the default, OpenAI)."""
    if endpoint is None:
        return True
    try:
        host = (urlsplit(endpoint.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    return any(host == h or host.endswith("." + h) for h in PRICED_HOSTS)


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cached: float
    source: str  # "configured" | "built-in price of 2025-08"

    def cost(self, usage: dict[str, int]) -> float:
        """Dollars for ``usage`` (prompt, completion and cached prompt tokens)."""
        prompt = int(usage.get("prompt_tokens") or 0)
        cached = min(int(usage.get("cached_tokens") or 0), prompt)
        out = int(usage.get("completion_tokens") or 0)
        return ((prompt - cached) * self.input + cached * self.cached + out * self.output) / 1_000_000


def _matches(name: str, entry: str) -> bool:
    if name == entry:
        return True
    if not name.startswith(entry + "-"):
        return False
    rest = name[len(entry) + 1 :]
    return rest[:1].isdigit() or rest == "latest"


def _lookup(model: str, table: dict[str, Any]) -> tuple[str, Any] | None:
    names = {model, model.lower(), model.split("/")[-1], model.split("/")[-1].lower()}
    best: tuple[str, Any] | None = None
    for entry, value in table.items():
        if any(_matches(n, str(entry)) for n in names) and (best is None or len(str(entry)) > len(best[0])):
            best = (str(entry), value)
    return best


def _number(spec: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = spec.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
            return float(v)
    return None


def price_for(model: str, configured: dict[str, Any] | None = None, endpoint: str | None = None) -> Price | None:
    """The price of ``model`` at ``endpoint`` (None: the default, OpenAI): the user's ``prices:``
    first, then the built-in table where the endpoint bills list prices (:func:`lists_prices`);
    None otherwise (a configured entry without input and output prices counts as unknown)."""
    found = _lookup(model, configured or {})
    if found is not None and isinstance(found[1], dict):
        spec = found[1]
        inp, out = _number(spec, "input", "in"), _number(spec, "output", "out")
        if inp is not None and out is not None:
            cached = _number(spec, "cached", "cached_input")
            return Price(inp, out, inp if cached is None else cached, "configured")
    if not lists_prices(endpoint):
        return None
    built = _lookup(model, BUILTIN)
    if built is None:
        return None
    inp, out, cached = built[1]
    return Price(inp, out, cached, f"built-in price of {PRICES_DATE}")


TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens")  # a request's usage
USAGE_KEYS = (*TOKEN_KEYS, "requests")  # several requests' usage, summed


def total(usages: list[dict[str, int]]) -> dict[str, int]:
    """The sum of several requests' usage (``requests``: how many)."""
    out = dict.fromkeys(TOKEN_KEYS, 0) | {"requests": len(usages)}
    for u in usages:
        for k in TOKEN_KEYS:
            out[k] += int(u.get(k) or 0)
    return out


def money(dollars: float) -> str:
    return f"${dollars:.4f}" if dollars < 1 else f"${dollars:,.2f}"


def minus(usage: dict[str, int], part: dict[str, int]) -> dict[str, int]:
    """``usage`` without ``part`` (token counts and requests, never below 0)."""
    return {k: max(0, int(usage.get(k) or 0) - int(part.get(k) or 0)) for k in USAGE_KEYS}


@dataclass(frozen=True)
class Bill:
    """What requests cost: ``usage`` sums every request; ``judged`` is the part of it the judge
    model's requests spent (``recall_judge_model``), by that model's name, each at its own price."""

    usage: dict[str, int]
    model: str  # the turn model: what the rest is priced at
    judged: dict[str, dict[str, int]]

    def own(self) -> dict[str, int]:
        """The turn model's part."""
        out = dict(self.usage)
        for part in self.judged.values():
            out = minus(out, part)
        return out

    def cost(self, configured: dict[str, Any] | None, endpoint: str | None) -> tuple[float | None, str]:
        """(dollars, ''), or (None, the model whose price is unknown): never a part guessed."""
        own = self.own()
        judged = [(m, u) for m, u in self.judged.items() if u.get("requests")]
        parts = ([(self.model, own)] if any(own.values()) or not judged else []) + judged
        dollars = 0.0
        for model, part in parts:
            price = price_for(model, configured, endpoint)
            if price is None:
                return None, model
            dollars += price.cost(part)
        return dollars, ""


def describe(bill: Bill, configured: dict[str, Any] | None, endpoint: str | None = None) -> str:
    """One line: tokens in (cached, and their share), out, requests, and the cost when every
    model's price is known (``endpoint``: where the requests went, to say why there is none)."""
    usage, model = bill.usage, bill.model
    n = int(usage.get("requests") or 0)
    prompt, cached = int(usage.get("prompt_tokens") or 0), int(usage.get("cached_tokens") or 0)
    pct = f", {100 * cached / prompt:.0f}%" if cached and prompt else ""
    line = (
        f"{prompt:,} tokens in ({cached:,} cached{pct}), "
        f"{int(usage.get('completion_tokens') or 0):,} out, {n} request{'s' if n != 1 else ''}"
    )
    dollars, unpriced = bill.cost(configured, endpoint)
    if dollars is None:
        where = "" if lists_prices(endpoint) else f" at {_host(endpoint)}"
        return f"{line}; no price known for {unpriced}{where} (set prices: in your config)"
    price = price_for(model, configured, endpoint)
    source = price.source if price is not None else ""
    judged = [m for m, u in bill.judged.items() if u.get("requests")]
    each = f"; the judge model {', '.join(judged)} at its own" if judged else ""
    return f"{line}; {money(dollars)} ({model}, {source}{each})"


def _host(endpoint: str | None) -> str:
    """The endpoint's host and port (never a user or password the URL may carry)."""
    try:
        parts = urlsplit((endpoint or "").strip())
        host = parts.hostname or "the endpoint"
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "the endpoint"
