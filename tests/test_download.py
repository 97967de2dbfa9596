"""Download over real HTTP on loopback (resume, restart, checksums) and archive extraction."""

import functools
import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from embryo_bench.data.download import download, extract
from embryo_bench.data.synthetic import zip_tree
from embryo_bench.errors import DataError, DownloadError


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files, honouring a single ``Range: bytes=N-`` header (HTTP 206)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        rng = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not rng or not path.endswith(".zip"):
            return super().do_GET()
        data = Path(path).read_bytes()
        start = int(rng.split("=")[1].rstrip("-"))
        if start >= len(data):
            self.send_response(416)
            self.end_headers()
            return None
        self.send_response(206)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        self.wfile.write(data[start:])
        return None


class NoRangeHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(directory, handler):
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def archive(small_db, tmp_path_factory):
    d = tmp_path_factory.mktemp("www")
    return zip_tree(small_db, d / "MouEmbTrkDtb.zip", prefix="MouEmbTrkDtb")


@pytest.fixture(params=[RangeHandler, NoRangeHandler], ids=["range", "no-range"])
def server(request, archive):
    srv = _serve(archive.parent, request.param)
    yield f"http://127.0.0.1:{srv.server_address[1]}", request.param
    srv.shutdown()


def test_download_verifies_and_renames(server, archive, tmp_path):
    url, _ = server
    expected = hashlib.sha256(archive.read_bytes()).hexdigest()
    info = download(f"{url}/{archive.name}", tmp_path / "a.zip", sha256=expected, progress=False)
    assert info["sha256"] == expected and info["sha256_verified"]
    assert (tmp_path / "a.zip").read_bytes() == archive.read_bytes()
    assert not (tmp_path / "a.zip.part").exists()


def test_download_resumes_or_restarts(server, archive, tmp_path):
    url, handler = server
    data = archive.read_bytes()
    (tmp_path / "a.zip.part").write_bytes(data[:1000])
    info = download(f"{url}/{archive.name}", tmp_path / "a.zip", progress=False)
    assert (tmp_path / "a.zip").read_bytes() == data
    assert info["resumed"] == (1000 if handler is RangeHandler else 0)
    assert info["sha256"] == hashlib.sha256(data).hexdigest() and not info["sha256_verified"]


def test_checksum_mismatch_leaves_nothing(server, archive, tmp_path):
    url, _ = server
    with pytest.raises(DownloadError, match=r"sha256 mismatch for a.zip: expected 0{64}"):
        download(f"{url}/{archive.name}", tmp_path / "a.zip", sha256="0" * 64, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_http_error_names_url(server, tmp_path):
    url, _ = server
    with pytest.raises(DownloadError, match=r"missing.zip: HTTP 404"):
        download(f"{url}/missing.zip", tmp_path / "a.zip", retries=0, progress=False)
    assert not (tmp_path / "a.zip").exists()


def test_extract_finds_wrapped_root(archive, tmp_path):
    root = extract(archive, tmp_path / "db")
    assert root == tmp_path / "db" / "MouEmbTrkDtb"
    assert (root / "E00" / "_trajectories.txt").is_file()


def test_extract_truncated_archive(archive, tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(DataError, match=r"bad.zip: .*(truncated|corrupt)"):
        extract(bad, tmp_path / "db")
    assert not (tmp_path / "db").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.zip"]


def test_extract_without_layout(tmp_path):
    src = tmp_path / "src"
    (src / "images").mkdir(parents=True)
    (src / "images" / "a.txt").write_text("x")
    bad = zip_tree(src, tmp_path / "other.zip")
    with pytest.raises(DataError, match=r"other.zip: no embryo folders E<NN>/"):
        extract(bad, tmp_path / "db")
    assert not (tmp_path / "db").exists()


class CutOnceHandler(RangeHandler):
    """First request: announces the whole file but closes the connection half way."""

    cut = True

    def do_GET(self):
        if type(self).cut and not self.headers.get("Range"):
            type(self).cut = False
            data = Path(self.translate_path(self.path)).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return None
        return super().do_GET()


def test_connection_cut_mid_body_is_resumed(archive, tmp_path):
    srv = _serve(archive.parent, CutOnceHandler)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/{archive.name}"
        info = download(url, tmp_path / "a.zip", retries=2, backoff=0, progress=False)
    finally:
        srv.shutdown()
    assert (tmp_path / "a.zip").read_bytes() == archive.read_bytes()
    assert info["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()


def test_stale_complete_part_with_other_size_restarts(server, archive, tmp_path):
    url, _ = server
    # A leftover .part longer than the file (e.g. another archive of the same name).
    (tmp_path / "a.zip.part").write_bytes(b"x" * (archive.stat().st_size + 10))
    download(f"{url}/{archive.name}", tmp_path / "a.zip", retries=1, backoff=0, progress=False)
    assert (tmp_path / "a.zip").read_bytes() == archive.read_bytes()


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_extract_names_a_member_that_escapes_the_archive(tmp_path, kind):
    import io
    import tarfile
    import zipfile

    bad = tmp_path / f"bad.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(bad, "w") as zf:
            zf.writestr("db/../../evil.txt", "x")
    else:
        with tarfile.open(bad, "w") as tf:
            info = tarfile.TarInfo("db/../../evil.txt")
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(DataError, match=r"unsafe member path 'db/\.\./\.\./evil\.txt'"):
        extract(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "evil.txt").exists()


class PageHandler(http.server.SimpleHTTPRequestHandler):
    """Answers 200 with an HTML page (a login or error page), or with the first half of the
    archive and no Content-Length (a body cut short that the client cannot detect)."""

    body = b""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(type(self).body)
        self.close_connection = True


@pytest.mark.parametrize("kind", ["html", "cut"])
def test_a_200_that_is_not_the_archive_is_not_kept_as_a_download(archive, tmp_path, kind):
    PageHandler.body = (
        b"<!DOCTYPE html><html><body>Please log in</body></html>"
        if kind == "html"
        else archive.read_bytes()[: archive.stat().st_size // 2]
    )
    srv = _serve(archive.parent, PageHandler)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/{archive.name}"
        message = r"sent a web page" if kind == "html" else r"not a complete zip or tar archive"
        with pytest.raises(DownloadError, match=message):
            download(url, tmp_path / "a.zip", retries=0, backoff=0, progress=False)
    finally:
        srv.shutdown()
    assert not (tmp_path / "a.zip").exists()
    assert (tmp_path / "a.zip.part").exists() == (kind == "cut")


def test_an_unresolvable_host_fails_at_once_with_a_hint(tmp_path):
    import time

    start = time.monotonic()
    with pytest.raises(DownloadError, match=r"does not resolve.*dataset.kind: local"):
        download("http://no-such-host.invalid/a.zip", tmp_path / "a.zip", progress=False)
    assert time.monotonic() - start < 10
    assert not list(tmp_path.iterdir())


def test_a_server_that_closes_at_once_reports_nothing_received(tmp_path):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]

    def close_all():
        for _ in range(2):
            conn, _ = sock.accept()
            conn.close()

    threading.Thread(target=close_all, daemon=True).start()
    with pytest.raises(DownloadError, match=r"after 1 retries .*nothing received"):
        download(f"http://127.0.0.1:{port}/a.zip", tmp_path / "a.zip", retries=1, backoff=0,
                 progress=False)  # fmt: skip
    sock.close()
