"""Download over real HTTP on loopback (resume, restart, checksums) and archive extraction."""

import functools
import hashlib
import http.server
import re
import threading
from pathlib import Path

import numpy as np
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
    """An earlier run's .part is resumed where the sha256 will check the whole file."""
    url, handler = server
    data = archive.read_bytes()
    (tmp_path / "a.zip.part").write_bytes(data[:1000])
    digest = hashlib.sha256(data).hexdigest()
    info = download(f"{url}/{archive.name}", tmp_path / "a.zip", sha256=digest, progress=False)
    assert (tmp_path / "a.zip").read_bytes() == data
    assert info["resumed"] == (1000 if handler is RangeHandler else 0)
    assert info["sha256"] == digest and info["sha256_verified"]


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
        message = (
            r"sent a web page"
            if kind == "html"
            else r"not a complete zip or tar archive \(cut short\?\); not kept: without a sha256"
        )
        with pytest.raises(DownloadError, match=message):
            download(url, tmp_path / "a.zip", retries=0, backoff=0, progress=False)
    finally:
        srv.shutdown()
    assert not (tmp_path / "a.zip").exists()
    # no sha256: a cut body is not kept, as a later run could not resume onto it
    assert not (tmp_path / "a.zip.part").exists()


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


# --- resuming only onto bytes that can be verified; a cut keeps what it read ----------------

#: A file of 3 MiB, and another version of it (the file changed on the server).
VERSION_A = b"DATA" + bytes(np.random.default_rng(1).integers(0, 256, 3 << 20, dtype=np.uint8))
VERSION_B = b"DATA" + bytes(np.random.default_rng(2).integers(0, 256, 3 << 20, dtype=np.uint8))


def versioned_server(versions: list[bytes], cut: int | None = None, validator: bool = True):
    """A server of one file: versions[k] to request k (the last one from then on), honouring
    ``Range: bytes=N-`` unless ``If-Range`` names another version than the one served (then
    the whole file, HTTP 200, as RFC 9110 says); with ``cut``, the first reply announces the
    whole length and closes after ``cut`` bytes; ``validator``: an ETag on each reply.
    Returns (server, url, the requests' headers)."""
    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            n = len(seen)
            seen.append(dict(self.headers))
            data = versions[min(n, len(versions) - 1)]
            tag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
            rng = self.headers.get("Range")
            start = 0
            if rng and self.headers.get("If-Range") in (None, tag):
                start = int(rng.split("=")[1].rstrip("-"))
            self.send_response(206 if start else 200)
            if validator:
                self.send_header("ETag", tag)
            self.send_header("Content-Length", str(len(data) - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            body = data[start:]
            if n == 0 and cut is not None:
                body, self.close_connection = body[:cut], True
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/a.bin", seen


@pytest.mark.parametrize("kind", ["zip", "text"])
def test_an_earlier_part_without_a_sha256_is_not_resumed_onto(archive, tmp_path, kind):
    """The size cannot tell a file spliced from an old .part and the rest of the new file:
    without a sha256 the .part is deleted and the download starts over."""
    data = archive.read_bytes() if kind == "zip" else b"Supposing that truth is a woman. " * 9000
    server, url, seen = versioned_server([data])
    (tmp_path / "a.bin.part").write_bytes(b"an old version of the file " * 40)
    try:
        info = download(url, tmp_path / "a.bin", archive=kind == "zip", progress=False)
    finally:
        server.shutdown()
    assert (tmp_path / "a.bin").read_bytes() == data
    assert info["resumed"] == 0 and "Range" not in seen[0]
    assert not (tmp_path / "a.bin.part").exists()


def test_a_stale_text_part_is_not_spliced_into_a_registry_file_without_a_sha256(tmp_path):
    """nietzsche.txt has no published sha256: an old .part of it is not resumed onto, and
    the file fetched is the one served, not one of the registry's size spliced from both."""
    import dataclasses

    from embryo_bench.data import registry
    from embryo_bench.data.fetch import fetch_file

    text = ("Supposing that Truth is a woman--what then? " * 400).encode()
    server, url, _ = versioned_server([text])
    ds = registry.get("nietzsche")
    f = dataclasses.replace(ds.files[0], url=url, bytes=len(text))
    (tmp_path / "nietzsche.txt.part").write_bytes(text[:500].upper())  # another edition
    try:
        fetch_file(ds, f, tmp_path / "nietzsche.txt", progress=False, retries=0)
    finally:
        server.shutdown()
    assert (tmp_path / "nietzsche.txt").read_bytes() == text


@pytest.mark.parametrize("validator", [True, False], ids=["etag", "no-validator"])
def test_a_file_changed_on_the_server_after_a_cut_is_fetched_whole(tmp_path, validator):
    """A cut 1.5 MiB into version A; the resume finds version B: with an ETag, If-Range
    makes the server send B whole; without any validator (and no sha256) the download starts
    over rather than resume. Either way the file is B, not A's start and B's end."""
    server, url, seen = versioned_server([VERSION_A, VERSION_B], cut=3 << 19,
                                         validator=validator)  # fmt: skip
    try:
        download(url, tmp_path / "a.bin", retries=1, backoff=0, archive=False, progress=False)
    finally:
        server.shutdown()
    assert (tmp_path / "a.bin").read_bytes() == VERSION_B
    if validator:
        assert seen[1]["Range"] == f"bytes={3 << 19}-" and seen[1]["If-Range"] == (
            f'"{hashlib.sha256(VERSION_A).hexdigest()[:16]}"'
        )
    else:
        assert "Range" not in seen[1]


def test_a_cut_inside_the_first_mib_keeps_what_it_read_and_a_rerun_resumes(tmp_path):
    digest = hashlib.sha256(VERSION_A).hexdigest()
    server, url, _ = versioned_server([VERSION_A], cut=300_000)
    try:
        with pytest.raises(DownloadError, match=r"300000 bytes kept in .*a\.bin\.part for resume"):
            download(url, tmp_path / "a.bin", sha256=digest, retries=0, archive=False,
                     progress=False)  # fmt: skip
    finally:
        server.shutdown()
    assert (tmp_path / "a.bin.part").read_bytes() == VERSION_A[:300_000]
    server, url, seen = versioned_server([VERSION_A])
    try:
        info = download(url, tmp_path / "a.bin", sha256=digest, archive=False, progress=False)
    finally:
        server.shutdown()
    assert info["resumed"] == 300_000 and seen[0]["Range"] == "bytes=300000-"
    assert (tmp_path / "a.bin").read_bytes() == VERSION_A


def test_a_cut_download_without_a_sha256_says_why_it_keeps_nothing(tmp_path):
    server, url, _ = versioned_server([VERSION_A], cut=300_000)
    try:
        with pytest.raises(DownloadError) as exc:
            download(url, tmp_path / "a.bin", retries=0, archive=False, progress=False)
    finally:
        server.shutdown()
    message = str(exc.value)
    assert "\n" not in message and message.startswith(f"{url}: download failed after 0 retries")
    assert message.endswith(
        "; 300000 bytes received, not kept: without a sha256 to check the whole file (setting "
        "dataset.sha256) a later run cannot resume onto them, it starts over"
    )
    assert list(tmp_path.iterdir()) == []


# --- what a hostile server or a careless command line hands in -----------------------------


class BadLengthHandler(http.server.SimpleHTTPRequestHandler):
    """Sends the file whole with a Content-Length that is not a number (urllib3 and
    http.client read it as no length)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        data = Path(self.translate_path(self.path)).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", "lots")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


def test_a_content_length_that_is_not_a_number_is_read_as_none(archive, tmp_path):
    """It ended in a ValueError's traceback; the body is what the archive and sha256 checks
    judge, as when a server sends no length."""
    srv = _serve(archive.parent, BadLengthHandler)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/{archive.name}"
        info = download(url, tmp_path / "a.zip", sha256=digest, retries=0, progress=False)
    finally:
        srv.shutdown()
    assert info["sha256_verified"] and (tmp_path / "a.zip").read_bytes() == archive.read_bytes()


@pytest.mark.parametrize("where", ["dest", "part"])
def test_a_folder_where_the_download_goes_is_named_and_kept(tmp_path, where):
    """A folder at the destination (an outdir given as the file) or at its .part ended in an
    IsADirectoryError's traceback, after the download; it is refused before any request."""
    folder = tmp_path / ("a.zip" if where == "dest" else "a.zip.part")
    folder.mkdir()
    (folder / "mine.txt").write_text("mine")
    with pytest.raises(DownloadError, match=rf"^{folder}: a folder; expected "):
        download("http://127.0.0.1:9/a.zip", tmp_path / "a.zip", retries=0, progress=False)
    assert (folder / "mine.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--timeout", "0", r"--timeout 0\.0: expected a finite number of seconds above 0"),
        ("--timeout", "nan", r"--timeout nan: expected a finite number of seconds above 0"),
        ("--retries", "-1", r"--retries -1: expected 0 or more"),
    ],
)
def test_download_options_out_of_range_are_refused_in_one_line(tmp_path, capsys, option, value,
                                                               message):  # fmt: skip
    """--timeout 0 or nan ended in a traceback from urllib3 or the socket, --retries -1 in a
    FileNotFoundError's (no attempt was made)."""
    from embryo_bench.cli import main

    argv = ["download", "--url", "http://127.0.0.1:9/a.zip", "--out", str(tmp_path / "a.zip"),
            "--info", str(tmp_path / "i.json"), "--no-progress", option, value]  # fmt: skip
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and re.search(message, error[0]), error
    assert list(tmp_path.iterdir()) == []
