"""The HTTP path to an OpenAI-compatible endpoint: a streamed POST read as server-sent events,
and a GET for JSON, through urllib3.

Why not the ``openai`` package: importing it costs about 0.6 s and 37 MB before the first byte
is sent (pydantic models for every API it covers), more than clio's whole start-up budget;
clio needs two endpoints of it. urllib3 (already installed with tiktoken's requests) imports in
~60 ms and brings connection pooling, TLS, chunked decoding and proxies. The trade-off is
recorded in docs/benchmarks.md.

This module knows HTTP and SSE, nothing about chat: :mod:`clio.llm.client` builds the payload,
retries and maps failures. Proxies come from the environment as with curl and the ``openai``
client (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``, ``NO_PROXY``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from clio.llm.errors import EndpointUnreachable

if TYPE_CHECKING:
    import urllib3

__all__ = ["ConnectFailed", "HTTPStatus", "StreamFailed", "Transport", "iter_sse"]

USER_AGENT = "clio (OpenAI-compatible client)"
MAX_ERROR_BODY = 1 << 20  # an error body is read up to this much
MAX_JSON_BODY = 32 << 20  # a model list is read up to this much


class ConnectFailed(Exception):
    """No response came: the connection was refused, timed out or failed before any status.
    ``tls``: it failed because the server's certificate was not accepted (retrying will not help);
    ``refused``: nothing listens at that address (the OS said so at once)."""

    def __init__(self, reason: str, *, tls: bool = False, refused: bool = False) -> None:
        super().__init__(reason)
        self.tls = tls
        self.refused = refused


class StreamFailed(Exception):
    """The response started and then broke off (reset, timeout, malformed chunk or event)."""


class HTTPStatus(Exception):
    """A non-2xx status; ``body`` is the parsed JSON (or None), ``text`` the raw body."""

    def __init__(self, status: int, body: Any, text: str, headers: dict[str, str]) -> None:
        super().__init__(f"HTTP {status}: {text[:200]}")
        self.status = status
        self.body = body
        self.text = text
        self.headers = headers


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url``, or None (direct, or bypassed by NO_PROXY)."""
    if not any(k.lower().endswith("_proxy") for k in os.environ):
        return None
    import urllib.request  # only when a proxy variable is set

    parts = urlsplit(url)
    if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get(parts.scheme) or proxies.get("all")


def ca_options() -> dict[str, Any]:
    """Where TLS certificates are checked against, as the ``openai`` client (httpx) did:
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when set, else certifi's bundle when installed, else the
    system's store."""
    if os.environ.get("SSL_CERT_FILE"):
        return {"ca_certs": os.environ["SSL_CERT_FILE"]}
    if os.environ.get("SSL_CERT_DIR"):
        return {"ca_cert_dir": os.environ["SSL_CERT_DIR"]}
    try:
        import certifi
    except ImportError:
        return {}
    return {"ca_certs": certifi.where()}


def iter_sse(chunks: Iterator[bytes]) -> Iterator[str]:
    """The ``data`` of each server-sent event in ``chunks`` (bytes as they arrive, split anywhere).

    Events end at a blank line; several ``data:`` lines of one event are joined with newlines;
    comments (``:``) and other fields (``event:``, ``id:``, ``retry:``) are skipped. A last
    event without its blank line is still delivered when the stream ends."""
    buffer = b""
    data: list[str] = []
    for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
            if not line:
                if data:
                    yield "\n".join(data)
                    data = []
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
    tail = buffer.rstrip(b"\r").decode("utf-8", errors="replace")
    if tail.startswith("data:"):
        data.append(tail[5:].lstrip(" "))
    if data:
        yield "\n".join(data)


class Transport:
    """One endpoint (``base_url``, e.g. ``http://127.0.0.1:8080/v1``) with its key and timeout."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float, *, proxies: bool = True) -> None:
        """``proxies=False``: straight to the endpoint, whatever the environment names."""
        import urllib3  # ~40 ms: imported with the first request, not on the way to the prompt

        self.base_url = base_url.rstrip("/")
        self._headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = urllib3.Timeout(connect=min(timeout, 30.0), read=timeout)
        proxy = proxy_for(self.base_url) if proxies else None
        tls = ca_options() if self.base_url.lower().startswith("https:") else {}
        try:
            self._pool: urllib3.PoolManager = (
                urllib3.ProxyManager(proxy, num_pools=2, maxsize=2, **tls)
                if proxy
                else urllib3.PoolManager(num_pools=2, maxsize=2, **tls)
            )
        except (urllib3.exceptions.HTTPError, ValueError) as exc:  # socks5://, a malformed URL
            shown = urlsplit(proxy or "")
            raise EndpointUnreachable(
                f"The proxy the environment names for {self.base_url} ({shown.scheme}://{shown.hostname}:"
                f"{shown.port}) cannot be used: clio speaks to http:// and https:// proxies only; "
                "change HTTPS_PROXY / HTTP_PROXY / ALL_PROXY, or add the host to NO_PROXY."
            ) from exc

    # -- requests --------------------------------------------------------------------------------
    def _open(self, method: str, path: str, body: bytes | None = None) -> urllib3.BaseHTTPResponse:
        import urllib3

        headers = dict(self._headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            response = self._pool.request(
                method,
                self.base_url + path,
                body=body,
                headers=headers,
                timeout=self._timeout,
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectFailed(_reason(exc), tls=_is_tls_failure(exc), refused=_is_refused(exc)) from exc
        if response.status >= 300:
            raw = response.read(MAX_ERROR_BODY, decode_content=True)
            response.release_conn()
            text = raw.decode("utf-8", errors="replace")
            try:
                parsed: Any = json.loads(text)
            except ValueError:
                parsed = None
            raise HTTPStatus(response.status, parsed, text, dict(response.headers))
        return response

    def stream(self, path: str, payload: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        """POST ``payload`` and yield each SSE event's JSON until ``[DONE]`` or the end.

        Raises :class:`ConnectFailed` before a response, :class:`HTTPStatus` for an error
        status, :class:`StreamFailed` when the stream breaks or carries something not JSON.
        Closing the generator early (an interrupt) drops the connection."""
        response = self._open("POST", path, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        finished = False
        try:
            for data in iter_sse(_chunks(response)):
                if data.strip() == "[DONE]":
                    finished = True
                    break
                try:
                    event = json.loads(data)
                except ValueError as exc:
                    raise StreamFailed(f"an event that is not JSON: {data[:80]!r}") from exc
                if isinstance(event, dict):
                    yield event
            finished = True
        finally:
            if finished:
                response.drain_conn()
                response.release_conn()
            else:  # interrupted or broken: the rest of the stream is not wanted on this connection
                response.close()

    def get_json(self, path: str, limit: int = MAX_JSON_BODY) -> Any:
        """GET ``path`` as JSON; a body over ``limit`` bytes is :class:`StreamFailed`."""
        return self._json(self._open("GET", path), limit)

    def post_json(self, path: str, payload: dict[str, Any], limit: int = MAX_JSON_BODY) -> Any:
        """POST ``payload`` and read the reply as JSON (errors as :meth:`get_json`'s)."""
        return self._json(self._open("POST", path, json.dumps(payload, ensure_ascii=False).encode("utf-8")), limit)

    @staticmethod
    def _json(response: urllib3.BaseHTTPResponse, limit: int) -> Any:
        import urllib3

        try:
            raw = response.read(limit + 1, decode_content=True)
        except urllib3.exceptions.HTTPError as exc:
            raise StreamFailed(_reason(exc)) from exc
        finally:
            response.release_conn()
        if len(raw) > limit:
            raise StreamFailed(f"the reply is over {limit:,} bytes")
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise StreamFailed("the reply is not JSON") from exc

    def close(self) -> None:
        self._pool.clear()


def _chunks(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """Bytes as the server sends them (``read1``: whatever has arrived, never waiting for more)."""
    import urllib3

    try:
        while True:
            chunk = response.read1(65536, decode_content=True)
            if not chunk:
                return
            yield chunk
    except urllib3.exceptions.HTTPError as exc:
        raise StreamFailed(_reason(exc)) from exc
    except OSError as exc:
        raise StreamFailed(str(exc) or type(exc).__name__) from exc


def _caused_by(exc: Exception, kinds: tuple[type[BaseException], ...]) -> bool:
    """``exc`` or what it wraps is one of ``kinds``."""
    seen: BaseException | None = exc
    for _ in range(5):  # urllib3 wraps: MaxRetryError(reason=SSLError(SSLCertVerificationError))
        if seen is None:
            return False
        if isinstance(seen, kinds):
            return True
        reason = getattr(seen, "reason", None)  # urllib3's wrapped error; ssl's is a str
        seen = reason if isinstance(reason, BaseException) else seen.__cause__ or seen.__context__
    return False


def _is_tls_failure(exc: Exception) -> bool:
    import ssl

    import urllib3

    return _caused_by(exc, (ssl.SSLError, urllib3.exceptions.SSLError))


def _is_refused(exc: Exception) -> bool:
    return _caused_by(exc, (ConnectionRefusedError,))


def _reason(exc: Exception) -> str:
    inner = getattr(exc, "reason", None)
    return str(inner or exc) or type(exc).__name__
