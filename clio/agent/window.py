"""The one owner of the context window: its size and where it came from, the token estimator,
the budget, the tool profile and every share derived from them.

The size comes from, in order: the ``context_window`` setting (flag, environment or config),
else the model's name in the known table or the default, capped by a window an endpoint once
stated in a rejection for this model (remembered in ``.clio/token_ratios.json``); then, during a
run, by what the endpoint states: a local server's ``/v1/models`` before the first request, or a
rejection. Each change re-chooses the profile (``full`` while its fixed part fits its share of the
budget, else ``lean``) and tells every listener (the context engine, the prompt builder, the
tools), so nothing else computes a share of the window.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clio.config import DEFAULT_CONTEXT_WINDOW
from clio.context.budget import Budget, Shares
from clio.context.tokens import TokenEstimator
from clio.llm.encoding import load_encoding
from clio.llm.window import probe_window, stated_window
from clio.store.model_state import ModelStateStore
from clio.tools.registry import REGISTRY
from clio.tools.spec import PROFILES

if TYPE_CHECKING:
    from clio.config import Settings


def lean_note() -> str:
    """The words a notice adds when the profile turns lean: the tools it keeps, by short name."""
    spec = (REGISTRY.get(n) for n in sorted(REGISTRY.offered("lean", 0)))
    names = ", ".join(s.aliases[0] if s.aliases else s.name for s in spec if s is not None)
    return f"; the lean tool profile ({names}) from now on"


# (estimator, instructions cap in characters) -> tokens of the full profile's fixed part
FullFixed = Callable[[TokenEstimator, int], int]
Listener = Callable[["Window"], None]


class Window:
    estimator: TokenEstimator
    budget: Budget

    def __init__(
        self,
        settings: Settings,
        store: ModelStateStore,
        *,
        tiktoken_dir: Path | None = None,
        notice: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.tiktoken_dir = tiktoken_dir
        self.notice = notice
        self.profile = "full"
        self.full_fixed_tokens = 0  # what the full profile's fixed part costs, for /context
        self._full_fixed: FullFixed | None = None
        self._pinned: tuple[str, int] | None = None  # (profile, window size) a resumed session sent
        self._listeners: list[Listener] = []
        # the endpoint's /v1/models reply when it was read at start (clio.app.served_model): the
        # probe reads the window from it instead of asking again
        self.listing: object = None
        self.load(settings.model)

    # -- the size and its sources ------------------------------------------------------------------
    def load(self, model: str) -> None:
        """The estimator and budget for ``model``, from one read of what was learned about it."""
        state = self.store.load(model)
        enc = load_encoding(model, self.tiktoken_dir)
        if state is not None:
            self.estimator = TokenEstimator.from_state(model, state, encoding=enc)
        else:
            self.estimator = TokenEstimator(model, encoding=enc)
        s = self.settings
        size = s.window()
        if s.context_window:
            self.source = f"set by {s.sources.get('context_window', 'the settings')}"
        else:
            self.source = "the default" if size == DEFAULT_CONTEXT_WINDOW else "the model table"
        learned = state.get("context_window") if state is not None else None
        if isinstance(learned, int) and learned >= 1024 and learned < size:
            size, self.source = learned, "stated by the endpoint in an earlier rejection"
        self.budget = Budget.for_window(size, s.max_output_tokens)
        # a local server states its window in its model list: ask before the first request
        self.probe_pending = s.context_window is None and s.is_local_endpoint()
        self._changed()

    @property
    def size(self) -> int:
        return self.budget.context_window

    @property
    def shares(self) -> Shares:
        return self.budget.shares(self.estimator.chars_per_token)

    def use(self, tokens: int, source: str) -> str:
        """Use a window of ``tokens`` from the next request on; a note when the profile went lean."""
        was = self.profile
        self.budget = Budget.for_window(tokens, self.settings.max_output_tokens)
        self.source = source
        self._changed()
        return lean_note() if self.profile == "lean" and was != "lean" else ""

    def rejected(self, tokens: int) -> None:
        """The endpoint rejected a request and stated its window: remember it for the model."""
        if tokens >= self.size:
            return
        old = self.size
        self.store.save_window(self.settings.model, tokens)
        lean = self.use(tokens, "stated by the endpoint in a rejection")
        self.notice(
            f"the endpoint's context window is {tokens:,} tokens, not {old:,}: using {tokens:,}{lean} "
            "(set context_window in .clio/config.yaml to avoid the rejection)"
        )

    def probe_once(self) -> None:
        """Before the first request of a run: the window a local endpoint states in its model list."""
        if not self.probe_pending:
            return
        self.probe_pending = False
        s = self.settings
        if self.listing is not None:
            stated = stated_window(self.listing, s.model)
        else:
            stated = probe_window(s.endpoint(), s.api_key, s.model)
        if stated is None:
            return
        if stated == self.size:
            self.source = "stated by the endpoint's model list"
            return
        old = self.size
        lean = self.use(stated, "stated by the endpoint's model list")
        self.notice(
            f"the endpoint serves a {stated:,}-token context window: using it instead of {old:,}{lean} "
            "(context_window in .clio/config.yaml overrides it)"
        )

    @property
    def stated_by_endpoint(self) -> bool:
        """The size is the endpoint's own figure (its model list, or a rejection), not a guess."""
        return self.source.startswith("stated by the endpoint")

    def learned(self) -> None:
        """Persist what the estimator learned from the last usage report."""
        self.store.save_estimator(self.estimator.model, self.estimator.state())

    # -- the profile and the listeners ---------------------------------------------------------------
    def measure_full_with(self, full_fixed: FullFixed) -> None:
        """How to count the full profile's fixed part (the prompt builder and the tool registry know)."""
        self._full_fixed = full_fixed
        self._changed()

    def keep_profile(self, profile: object, size: object) -> None:
        """A resumed session keeps the profile it was sent with while the window keeps its size:
        the head of its requests (system prompt, tools) stays the same for a prompt cache, even
        when a newly learned ratio puts the full profile's fixed part on the other side of its
        share. None, or another size: chosen afresh."""
        pinned = (str(profile), size) if profile in PROFILES and isinstance(size, int) else None
        if pinned != self._pinned:
            self._pinned = pinned
            self._changed()

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(window)`` now and after every change."""
        self._listeners.append(listener)
        listener(self)

    def _changed(self) -> None:
        shares = self.shares
        if self._full_fixed is not None:
            self.full_fixed_tokens = self._full_fixed(self.estimator, shares.instructions_chars())
        setting = self.settings.profile
        if setting in PROFILES:
            self.profile = setting
        elif self._pinned is not None and self._pinned[1] == self.size:
            self.profile = self._pinned[0]
        else:
            self.profile = "full" if shares.fits_full(self.full_fixed_tokens) else "lean"
        for listener in self._listeners:
            listener(self)
