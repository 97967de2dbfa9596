"""Fetch and unpack the Mouse Embryo Tracking Database archive.

HTTP with retries (urllib3 ``Retry`` on a ``requests`` session), resume from a ``.part`` file
with an HTTP ``Range`` request (restarting from zero when the server ignores it), a ``tqdm``
progress bar, sha256 verification when a checksum is configured, and an atomic rename onto the
final name only after every check passed.

Bytes are resumed onto only where the result can be verified: a ``.part`` left by an earlier
run is continued only when the sha256 of the whole file is known (checked at the end);
without one it is deleted and the download starts over, as the size alone cannot tell a
spliced file (an old partial file of another version, plus the rest of the new one) from the
file. Within one call, a connection cut short is resumed with ``If-Range`` and the validator
(a strong ETag or Last-Modified) of this call's first reply, so a file changed on the server
in between is sent whole again; with neither a sha256 nor a validator it starts over.
"""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import requests
import urllib3
from requests.adapters import HTTPAdapter
from tqdm import tqdm
from urllib3.util.retry import Retry

from ..errors import DataError, DownloadError
from ..io import sha256_file
from .sources import find_db_root

log = logging.getLogger(__name__)
#: The most bytes read at once; each read returns what has arrived, so a cut loses none.
CHUNK = 1 << 20


def _session(retries: int, backoff: float) -> requests.Session:
    # One retry layer for connection and read errors: download()'s own loop (which also
    # resumes a body cut short). urllib3 retries only the HTTP statuses below.
    retry = Retry(
        total=retries,
        connect=0,
        read=0,
        status=retries,
        backoff_factor=backoff,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=("GET", "HEAD"),
    )
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    return session


#: What a failed download of the database archive names: where its URL and checksum are set
#: and how to use a copy fetched elsewhere (:func:`download`'s ``settings``).
DATABASE_SETTINGS = {
    "url": "dataset.url",
    "sha256": "setting dataset.sha256",
    "offline": "fetch the archive elsewhere and use dataset.kind: local with dataset.path",
}


def _check_host(url: str, settings: dict[str, str]) -> None:
    """Fail at once, with a hint, when the URL's host name does not resolve (retrying a DNS
    failure only takes minutes); ``settings`` as :func:`download`'s.

    Raises:
        DownloadError: the host does not resolve.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except (socket.gaierror, UnicodeError) as exc:
        raise DownloadError(
            f"{url}: host {parts.hostname!r} does not resolve ({exc}); check "
            f"{settings['url']}, or {settings['offline']}"
        ) from exc


def _check_archive(url: str, part: Path, settings: dict[str, str], resumable: bool) -> None:
    """Check the downloaded bytes open as a zip or tar archive (their member list reads);
    ``settings`` as :func:`download`'s; ``resumable``: a later run may resume onto the bytes
    (a sha256 will check the whole file).

    Raises:
        DownloadError: an HTML/text page (removed: resuming it cannot help) or bytes that are
            not a complete archive (kept as ``.part`` where ``resumable``: a rerun resumes
            from its end; removed otherwise, and the message says why).
    """
    import tarfile
    import zipfile

    try:
        if zipfile.is_zipfile(part):
            with zipfile.ZipFile(part) as zf:
                zf.namelist()
            return
        if tarfile.is_tarfile(part):
            with tarfile.open(part) as tf:
                tf.getmembers()
            return
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError):
        pass
    _check_not_page(url, part, settings)
    size = part.stat().st_size
    if resumable:
        raise DownloadError(
            f"{url}: the {size} bytes received are not a complete zip or tar archive (cut "
            f"short?); kept in {part}, a rerun resumes from its end"
        )
    part.unlink()
    raise DownloadError(
        f"{url}: the {size} bytes received are not a complete zip or tar archive (cut "
        f"short?); {_NOT_KEPT.format(setting=settings['sha256'])}"
    )


#: Why bytes received are not kept for a later run (formatted with the sha256's setting).
_NOT_KEPT = (
    "not kept: without a sha256 to check the whole file ({setting}) a later run cannot "
    "resume onto them, it starts over"
)


def _check_not_page(url: str, part: Path, settings: dict[str, str]) -> None:
    """Refuse bytes that start as an HTML/XML page (a login or error page sent with HTTP 200);
    ``settings`` as :func:`download`'s.

    Raises:
        DownloadError: a page (removed: resuming it cannot help).
    """
    with open(part, "rb") as fh:
        head = fh.read(512).lstrip().lower()
    if head.startswith((b"<!doctype", b"<html", b"<?xml", b"<")):
        part.unlink()
        raise DownloadError(
            f"{url}: the server sent a web page ({head[:40]!r}...), not the file; "
            f"nothing was kept (check {settings['url']})"
        )


def _content_length(headers) -> int | None:
    """The reply's Content-Length in bytes, or None where it gives none or one that is not a
    whole number (as urllib3 and http.client read it: the body then ends when the server
    closes, and the sha256 and archive checks judge it)."""
    length = headers.get("Content-Length")
    return int(length) if length is not None and length.strip().isdigit() else None


class _Restart(Exception):
    """The server's reply does not continue the partial file: start again from zero."""


class _TooLarge(Exception):
    """The server sends more bytes than the file has (``max_bytes``)."""


def _validator(headers) -> str | None:
    """What identifies the version of the file a reply sent, for ``If-Range``: a strong
    ETag, else Last-Modified (a weak ETag cannot be used there); None without either."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return headers.get("Last-Modified")


def _fetch(
    session: requests.Session, url: str, part: Path, timeout: float, progress: bool, state: dict
) -> None:
    """One request: continue ``part`` from its current size (or restart) until the body ends.
    The first reply's starting offset is recorded as ``state["resumed"]``; a resume names the
    version of the bytes held (``state["validator"]``, ``If-Range``), so a server whose file
    changed sends all of it again; every byte received counts in ``state["received"]``.

    Raises _Restart, DownloadError, or requests exceptions (retried by :func:`download`).
    """
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    if have and state.get("validator"):
        headers["If-Range"] = state["validator"]
    with session.get(url, headers=headers, stream=True, timeout=timeout) as resp:
        if resp.status_code == 416:  # nothing left to send: complete only if sizes agree
            total = resp.headers.get("Content-Range", "").rpartition("/")[2]
            if total.isdigit() and int(total) == have:
                state.setdefault("resumed", have)
                return
            part.unlink()
            raise _Restart(f"HTTP 416 with Content-Range {total!r} for {have} bytes held")
        if resp.status_code == 206:
            if not resp.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
                part.unlink()
                raise _Restart("HTTP 206 not continuing at the partial file's end")
            mode = "ab"
        elif resp.status_code == 200:
            have, mode = 0, "wb"  # the server ignored Range, or the file changed: restart
            state["validator"] = _validator(resp.headers)
        else:
            raise DownloadError(f"{url}: HTTP {resp.status_code} {resp.reason}")
        state.setdefault("resumed", have)
        state.setdefault("validator", _validator(resp.headers))
        length = _content_length(resp.headers)
        total = have + length if length is not None else None
        limit = state.get("max_bytes")
        if limit is not None and total is not None and total > limit:
            raise _TooLarge(f"announced {total:,} bytes")
        got = 0
        with (
            open(part, mode) as fh,
            tqdm(
                total=total,
                initial=have,
                unit="B",
                unit_scale=True,
                disable=not progress,
                desc=part.name,
            ) as bar,
        ):
            # read1 (urllib3 2) returns what has arrived: iter_content's reads of a whole
            # chunk lost the bytes of a chunk cut short (all of a cut inside the first MiB).
            read = getattr(resp.raw, "read1", None) or resp.raw.read
            try:
                while chunk := read(CHUNK, decode_content=True):
                    fh.write(chunk)
                    got += len(chunk)
                    state["received"] = state.get("received", 0) + len(chunk)
                    bar.update(len(chunk))
                    if limit is not None and have + got > limit:  # a body without end
                        raise _TooLarge(f"{have + got:,} bytes and going on")
            except urllib3.exceptions.HTTPError as exc:  # as iter_content wraps them
                raise requests.exceptions.ChunkedEncodingError(
                    f"connection broken after {got} bytes of this reply ({exc})"
                ) from exc
        if length is not None and got < length:
            raise requests.exceptions.ChunkedEncodingError(
                f"connection closed after {got} of {length} bytes"
            )


def download(
    url: str,
    dest: str | Path,
    sha256: str | None = None,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60.0,
    progress: bool = True,
    *,
    archive: bool = True,
    settings: dict[str, str] = DATABASE_SETTINGS,
    max_bytes: int | None = None,
) -> dict:
    """Download ``url`` to ``dest``, resuming a previous partial download.

    Args:
        url: http(s) URL of the archive.
        dest: final path; bytes accumulate in ``dest.part`` and are renamed onto ``dest`` only
            when complete and (if ``sha256`` is given) verified.
        sha256: expected hex digest, or None to record the observed one without checking.
            Without it no ``.part`` of an earlier run is resumed (it is deleted: nothing
            could tell a spliced file), nor one of this call without a validator of its
            version, and a failed call keeps nothing.
        retries: attempts after the first, both for the request (urllib3 ``Retry``: connection
            errors, HTTP 429/5xx) and for a body cut short (resumed with ``Range``).
        backoff: exponential backoff factor between attempts (s).
        timeout: connect/read timeout per request (s).
        progress: show a tqdm progress bar (on stderr).
        archive: check that the bytes open as a zip or tar archive; False for other formats
            (a gzip file, a text corpus), which are only refused when they are a web page.
        settings: what the errors name: ``url`` and ``sha256``, where the URL and the
            expected checksum were set, and ``offline``, how to use a copy fetched elsewhere
            (default: the database archive's, :data:`DATABASE_SETTINGS`).
        max_bytes: the file's size where it is known: a reply announcing more, or sending
            more, is stopped there (nothing kept); None: no bound.

    Returns:
        dict with ``url``, ``path``, ``bytes``, ``sha256`` (observed), ``sha256_verified`` and
        ``resumed`` (bytes reused from an earlier partial download).

    Raises:
        DownloadError: a folder at ``dest`` or its ``.part`` (before any request), a reply
            of more than ``max_bytes`` (nothing kept, not retried), a host
            name that does not resolve (at once, no retries), HTTP error
            or broken connection after the retries (the bytes received kept in ``.part``
            with a ``sha256``, deleted without one: the message says which), a checksum
            mismatch (the partial file is then deleted so the next try starts clean), or a
            body that is not a zip or tar archive (:func:`_check_archive`; with
            ``archive=False``, a web page): nothing is renamed onto ``dest``.
    """
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    # Before any request: a folder there failed only at the rename after the download, or
    # on the first write, with a traceback.
    for path, what in ((dest, "the downloaded file"), (part, "the partial download")):
        if path.is_dir():
            raise DownloadError(f"{path}: a folder; expected {what} there (a file, or nothing)")
    _check_host(url, settings)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if part.exists() and not sha256:
        log.warning(
            "%s: %d bytes of an earlier download deleted; without a sha256 (%s) nothing could "
            "check a file resumed onto them: starting over",
            part, part.stat().st_size, settings["sha256"],
        )  # fmt: skip
        part.unlink()
    state: dict = {"max_bytes": max_bytes}
    session = _session(retries, backoff)
    session.headers["Accept-Encoding"] = "identity"  # byte ranges of the file itself
    for attempt in range(retries + 1):
        if attempt and not sha256 and not state.get("validator") and part.exists():
            part.unlink()  # nothing tells whether the server's file is still the one begun
        try:
            _fetch(session, url, part, timeout, progress, state)
            break
        except _TooLarge as exc:
            # Not retried: a server sending another file would send it again, and one
            # sending without end filled the disk.
            part.unlink(missing_ok=True)
            raise DownloadError(
                f"{url}: the server sent more than the {max_bytes:,} bytes of {dest.name} "
                f"({exc}; {settings['sha256']}); nothing was kept"
            ) from None
        except (_Restart, requests.RequestException) as exc:
            if isinstance(exc, _Restart):
                state["resumed"] = 0
            if attempt == retries:
                failed = f"{url}: download failed after {retries} retries ({exc})"
                kept = part.stat().st_size if part.exists() else 0
                if kept and sha256:
                    raise DownloadError(
                        f"{failed}; {kept} bytes kept in {part} for resume"
                    ) from exc
                part.unlink(missing_ok=True)
                received = state.get("received", 0)
                if not received:
                    raise DownloadError(f"{failed}; nothing received") from exc
                why = (
                    _NOT_KEPT.format(setting=settings["sha256"])
                    if not sha256
                    else "none kept: the server's replies did not continue them"
                )
                raise DownloadError(f"{failed}; {received} bytes received, {why}") from exc
            time.sleep(backoff * 2**attempt)
    observed = sha256_file(part)
    if sha256 and observed.lower() != sha256.lower():
        part.unlink()
        raise DownloadError(
            f"{url}: sha256 mismatch for {dest.name}: expected {sha256} "
            f"({settings['sha256']}), got {observed}; the partial file was removed"
        )
    if archive:
        _check_archive(url, part, settings, resumable=bool(sha256))
    else:
        _check_not_page(url, part, settings)
    os.replace(part, dest)
    return {
        "url": url,
        "path": str(dest),
        "bytes": dest.stat().st_size,
        "sha256": observed,
        "sha256_verified": bool(sha256),
        "resumed": state.get("resumed", 0),
    }


def extract(archive: str | Path, out_dir: str | Path) -> Path:
    """Unpack a zip or tar archive into ``out_dir`` atomically and check the database layout.

    Members are extracted into a temporary sibling folder, which is renamed onto ``out_dir``
    only when extraction succeeded and :func:`embryo_bench.data.sources.find_db_root` finds the
    ``E<NN>`` embryo folders.

    Returns:
        the folder that holds the embryo folders.

    Raises:
        DataError: unreadable or truncated archive, unsafe member paths, or no ``E<NN>``
            folders inside.
    """
    archive, out_dir = Path(archive), Path(out_dir)
    if not archive.is_file():
        raise DataError(f"{archive}: archive not found")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as zf:
                    bad = zf.testzip()
                    if bad is not None:
                        raise DataError(f"{archive}: corrupt member {bad!r} (CRC mismatch)")
                    for name in zf.namelist():
                        if name.startswith("/") or ".." in Path(name).parts:
                            raise DataError(f"{archive}: unsafe member path {name!r}")
                    zf.extractall(tmp)
            elif tarfile.is_tarfile(archive):
                with tarfile.open(archive) as tf:
                    tf.extractall(tmp, filter="data")
            else:
                raise DataError(f"{archive}: not a zip or tar archive (truncated or wrong file?)")
        except tarfile.FilterError as exc:  # a member the "data" filter refuses
            member = getattr(exc, "tarinfo", None)
            name = member.name if member is not None else "?"
            raise DataError(
                f"{archive}: unsafe member path {name!r} ({exc}); a member must stay inside "
                "the archive's folder (no absolute paths, '..', or links out)"
            ) from exc
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
            raise DataError(f"{archive}: cannot unpack, truncated or corrupt ({exc})") from exc
        try:
            root_rel = find_db_root(tmp).relative_to(tmp)
        except DataError as exc:
            raise DataError(
                f"{archive}: no embryo folders E<NN>/ at the top level or one level down; "
                "expected the Mouse Embryo Tracking Database layout "
                "(E<NN>/Frame<NNN>.png + E<NN>/_trajectories.txt)"
            ) from exc
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
        return out_dir / root_rel
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
