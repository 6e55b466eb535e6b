"""clio as a client of MCP servers: the SDK's asyncio client in ONE background thread.

:class:`McpClients` starts every configured server at once (in parallel, each with its own
timeout) on its own event loop in a daemon thread, so the REPL prompt never waits for them and
the ``mcp`` SDK is imported only there. The turn loop waits for them before its first request
(:meth:`McpClients.wait_started`), then calls tools with :meth:`McpClients.call`, which blocks
the calling thread: Ctrl-C there cancels the call on the loop.

A stdio server is a program clio runs, so like every shell command it starts through the
Landlock wrapper with ``hidden`` (``$CLIO_HOME``: the config that may hold the API key, the
memory key, the MCP token) out of its reach (clio/safety/wrapper.py); it gets the SDK's minimal
environment (no key) plus its configured ``env``.

A server that cannot start (no such command, a crash, a hang past its timeout, a malformed tool
schema) or that dies or hangs in a call is marked ``failed``: one line
(:meth:`McpClients.take_problems`), its tools are no longer offered, the session carries on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from clio import threads
from clio.mcp.config import ServerSpec
from clio.mcp.remote import Malformed, RemoteTool, describe_error, read_tools, result_text

STOP_GRACE = 5.0  # seconds the servers get to shut down on exit
# The SDK stops a stdio server by closing its stdin, then 2 s later SIGTERM to its process group,
# 2 s later SIGKILL: closing waits that long, and more, for each server's process to be gone.
STOP_WAIT = STOP_GRACE + 8.0
# A Ctrl-C is a process-wide SIGINT that the kernel may hand to any thread (the MCP loop's, the
# warm-up's) rather than the main one; Python then runs its handler only when the main thread
# next runs bytecode. A main thread asleep in one long wait would miss it until the wait ends, so
# waits the user may cut short sleep in slices this long.
WAIT_SLICE = 0.1


def wait_for(event: threading.Event, timeout: float) -> bool:
    """``event.wait(timeout)`` that a Ctrl-C interrupts at once, whichever thread got the signal."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if event.wait(max(0.0, min(WAIT_SLICE, left))):
            return True
        if left <= WAIT_SLICE:
            return False


def result_of(future: concurrent.futures.Future[Any]) -> Any:
    """``future.result()`` that a Ctrl-C interrupts at once, whichever thread got the signal."""
    while not future.done():
        concurrent.futures.wait([future], timeout=WAIT_SLICE)
    return future.result()


class CallFailed(Exception):
    """A call did not complete: the server is gone or did not answer in time (it is then failed)."""


@dataclass
class ServerState:
    spec: ServerSpec
    state: str = "starting"  # starting | ready | failed | stopped
    error: str = ""
    tools: list[RemoteTool] = field(default_factory=list)
    start_ms: float | None = None  # process start to tools listed
    skipped: list[str] = field(default_factory=list)  # tools left out by the allow-list
    settled: threading.Event = field(default_factory=threading.Event)  # ready or failed
    task: asyncio.Task[None] | None = None  # its life on the loop (set as it begins)
    scope: Any = None  # the anyio CancelScope of its life: cancelling it keeps the SDK's shutdown shielded
    session: Any = None  # the SDK's ClientSession while ready
    stop: asyncio.Event | None = None
    stderr: IO[str] | None = None

    @property
    def name(self) -> str:
        return self.spec.name


class McpClients:
    """The configured MCP servers of one clio process and the thread that talks to them."""

    def __init__(self, specs: list[ServerSpec], cwd: Path, hidden: Sequence[str] = ()) -> None:
        self.servers = {s.name: ServerState(s) for s in specs}
        self.cwd = cwd
        self.hidden = tuple(hidden)  # paths no stdio server may read (clio's own folder)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: list[concurrent.futures.Future[None]] = []
        self._reported: set[str] = set()
        self._lock = threading.Lock()

    # -- life cycle (caller's thread) ------------------------------------------------------------
    def start(self) -> None:
        """Start every server in the background; returns at once."""
        if self._thread is not None or not self.servers:
            return
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threads.start(loop.run_forever, "clio-mcp")
        for st in self.servers.values():
            st.stop = asyncio.Event()  # set from this thread through the loop (close, a failure)
            self._tasks.append(asyncio.run_coroutine_threadsafe(self._serve(st), loop))

    def starting(self, within: float = 0.0) -> list[str]:
        """The servers still starting after waiting up to ``within`` seconds for them to settle."""
        deadline = time.monotonic() + within
        for st in self.servers.values():
            st.settled.wait(max(0.0, deadline - time.monotonic()))
        return [st.name for st in self.servers.values() if st.state == "starting"]

    def wait_started(self) -> None:
        """Block until every server is ready or failed (each is bounded by its own timeout)."""
        for st in self.servers.values():
            if not wait_for(st.settled, st.spec.timeout + STOP_GRACE):  # its own deadline fails it before
                self._fail(st, f"did not start within {st.spec.timeout:g}s")

    def give_up(self, why: str) -> None:
        """Leave out every server still starting (``why`` says why)."""
        for st in self.servers.values():
            if st.state == "starting":
                self._fail(st, why)

    def take_problems(self) -> list[str]:
        """One line per server that failed since the last call (each reported once)."""
        out = []
        with self._lock:
            for st in self.servers.values():
                if st.state == "failed" and st.name not in self._reported:
                    self._reported.add(st.name)
                    out.append(f"MCP server '{st.name}' unavailable: {st.error}; its tools are left out")
        return out

    def close(self) -> None:
        """Stop every server and the thread, on any way out: a ready server is asked to stop, one
        still starting (or given up on while starting) is cancelled; either way the SDK closes its
        stdin, then kills its process group. The loop runs until every server's life has ended
        (bounded by STOP_WAIT; a Ctrl-C meanwhile does not cut it short), so none outlives clio."""
        loop = self._loop
        if loop is None:
            return
        self._loop = None
        stopping = asyncio.run_coroutine_threadsafe(self._stop_all(), loop)
        deadline = time.monotonic() + STOP_WAIT + 1
        while True:
            try:
                stopping.result(max(0.0, deadline - time.monotonic()))
                break
            except KeyboardInterrupt:
                continue  # the servers are being stopped: leaving now would leave them running
            except Exception:  # noqa: BLE001 - past the deadline: the rest is the OS's
                break
        for task in self._tasks:
            task.cancel()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(STOP_GRACE)
        for st in self.servers.values():
            if st.state == "ready":
                st.state = "stopped"
            if st.stderr is not None:
                st.stderr.close()

    async def _stop_all(self) -> None:
        """On the loop: end each server's life and wait for it (each began before this runs)."""
        lives = []
        for st in self.servers.values():
            if st.task is None or st.task.done():
                continue
            if st.state == "ready" and st.stop is not None:
                st.stop.set()
            elif st.scope is not None:
                # not task.cancel(): a native cancel breaks through the shield of the SDK's shutdown
                # (stdin closed, then the process group killed) and the process is left running
                st.scope.cancel()
            else:
                st.task.cancel()  # not begun yet: nothing to shut down
            lives.append(st.task)
        if lives:
            await asyncio.wait(lives, timeout=STOP_WAIT)

    # -- calls (caller's thread) -----------------------------------------------------------------
    def call(self, server: str, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        """(text, is_error) of one call; CallFailed when the server is gone or times out.
        KeyboardInterrupt cancels the call and propagates."""
        st = self.servers[server]
        loop = self._loop
        if st.state != "ready" or loop is None:
            raise CallFailed(f"MCP server '{server}' is not running ({st.error or st.state})")
        future = asyncio.run_coroutine_threadsafe(self._call(st, tool, args), loop)
        try:
            return result_of(future)
        except KeyboardInterrupt:
            future.cancel()
            raise
        except CallFailed as exc:
            self._fail(st, str(exc))
            with self._lock:
                self._reported.add(server)  # the call's own error line says it
            raise CallFailed(f"MCP server '{server}' {exc}; its tools are no longer offered") from None

    # -- the loop's side -------------------------------------------------------------------------
    def _fail(self, st: ServerState, error: str) -> None:
        with self._lock:
            if st.state in ("starting", "ready"):
                st.state, st.error = "failed", error
                st.tools = []
        st.settled.set()
        if st.stop is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(st.stop.set)

    async def _serve(self, st: ServerState) -> None:
        import anyio  # the SDK's own dependency: its cancel scopes nest with the transports' task groups

        assert st.stop is not None
        st.task = asyncio.current_task()
        began = time.perf_counter()
        # given up on at its deadline, even while a hung process is still being shut down
        def late() -> None:
            if st.state == "starting":
                self._fail(st, f"did not start within {st.spec.timeout:g}s")

        give_up = asyncio.get_running_loop().call_later(st.spec.timeout, late)
        try:
            # one scope for the server's whole life: its deadline bounds the start, then is lifted
            with anyio.CancelScope(deadline=anyio.current_time() + st.spec.timeout) as scope:
                st.scope = scope
                async with AsyncExitStack() as stack:
                    session = await self._connect(st, stack)
                    listed = await _list_tools(session)
                    scope.deadline = math.inf
                    give_up.cancel()
                    tools, skipped = read_tools(st.spec, listed)  # ValueError: a malformed schema
                    st.start_ms = (time.perf_counter() - began) * 1000
                    with self._lock:
                        if st.state != "starting":  # given up on meanwhile
                            return
                        st.session, st.tools, st.skipped, st.state = session, tools, skipped, "ready"
                    st.settled.set()
                    await st.stop.wait()
            if scope.cancelled_caught and st.state == "starting":
                self._fail(st, f"did not start within {st.spec.timeout:g}s")
        except BaseException as exc:  # noqa: BLE001 - any failure costs this server only
            if st.state in ("starting", "ready"):
                self._fail(st, self._why(st, exc))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            give_up.cancel()
            st.session = None
            st.settled.set()

    def _why(self, st: ServerState, exc: BaseException) -> str:
        why = describe_error(exc)
        if st.stderr is not None:  # a crashing server usually says why on its stderr
            try:
                st.stderr.seek(0)
                lines = [ln.strip() for ln in st.stderr.read()[-4000:].splitlines() if ln.strip()]
            except (OSError, ValueError):
                lines = []
            if lines:
                why += f" (its stderr: {lines[-1][:160]})"
        return why

    async def _connect(self, st: ServerState, stack: AsyncExitStack) -> Any:
        """An initialized ClientSession whose transport stays open until ``stack`` closes."""
        from mcp import ClientSession, StdioServerParameters

        spec = st.spec
        if spec.url:
            from mcp.client.streamable_http import streamable_http_client

            read, write = await stack.enter_async_context(streamable_http_client(spec.url))
        else:
            from mcp.client.stdio import stdio_client

            assert spec.command is not None
            st.stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in close()
            command, args = self._argv(spec.command, list(spec.args))
            params = StdioServerParameters(
                command=command, args=args, env=dict(spec.env) or None, cwd=spec.cwd or str(self.cwd)
            )
            with threads.spawning():  # the loop's thread blocks SIGINT: the server must not inherit that
                read, write = await stack.enter_async_context(stdio_client(params, errlog=st.stderr))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    def _argv(self, command: str, args: list[str]) -> tuple[str, list[str]]:
        """The server's command, through the wrapper that hides ``hidden`` where Landlock is there,
        and keeps it from writing there too where user namespaces are (a command that cannot be
        found is left to the SDK, which says so in its own words)."""
        from clio.safety.containment import landlock_abi
        from clio.safety.wrapper import guards_writes, wrap_command

        found = shutil.which(command)
        if not self.hidden or found is None or landlock_abi() < 1:
            return command, args
        argv = wrap_command([found, *args], [], hidden=self.hidden, only_hide=True, namespaces=guards_writes())
        return argv[0], argv[1:]

    async def _call(self, st: ServerState, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        session = st.session
        if session is None:
            raise CallFailed(st.error or "stopped")
        import anyio

        try:
            with anyio.fail_after(st.spec.tool_timeout):
                result = await session.call_tool(tool, args)
        except TimeoutError:
            raise CallFailed(f"did not answer within {st.spec.tool_timeout:g}s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the connection closed (the server died) or an SDK error
            if _closed(exc) or st.state != "ready":
                raise CallFailed(f"stopped during the call ({describe_error(exc)})") from None
            return f"MCP error: {describe_error(exc)}", True
        return result_text(result), bool(getattr(result, "is_error", False))


def _closed(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(w in text for w in ("closed", "brokenresource", "endofstream", "connection"))


async def _list_tools(session: Any) -> list[Any]:
    """Every tool of the server (following pagination, at most 50 pages)."""
    from mcp import types

    tools: list[Any] = []
    cursor = None
    for _ in range(50):
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        try:
            page = await session.list_tools(params=params)
        except Exception as exc:
            if "validation" in type(exc).__name__.lower():  # pydantic's: the list is not MCP's shape
                where = str(exc).strip().splitlines()[1:2]  # pydantic's second line: the bad field
                detail = f" at {where[0].strip()}" if where else ""
                raise Malformed(f"returned a malformed tool list{detail}") from None
            raise
        tools.extend(page.tools)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return tools

