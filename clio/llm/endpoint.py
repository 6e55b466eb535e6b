"""Where requests go and how patiently: the one settings object of the model client.

Built from the user's settings in one place (``clio.config.Settings.client_endpoint``); the
client (:class:`clio.llm.client.LLMClient`) and the window probe read it. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str = ""  # "not-needed" for local servers that ask for none
    model: str = ""
    timeout: float = 600.0  # seconds a request may take without a byte
    max_retries: int = 4  # for timeouts, resets, 429 and 5xx (a refused connection gets one quick retry)
