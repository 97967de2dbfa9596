"""Access to Docker daemons through the Docker SDK for Python: how a daemon is reached
(:class:`Daemon`: its address and, over TCP, the TLS files that authenticate both ends), a
checked client for it, and who a daemon is. Apart from image building
(:mod:`embryo_bench.runners.containers`), so that the code a host training run hashes does not
include
the image builds.

Docker's TCP socket gives whoever reaches it root on that machine, so a ``tcp://`` daemon on
another machine is used only over TLS with ``--tlsverify`` (the SDK's
:class:`docker.tls.TLSConfig`, as ``docker.from_env`` builds it): the target's ``docker_tls``
files, else the Docker environment variables as the docker CLI reads them
(``DOCKER_TLS_VERIFY``, ``DOCKER_CERT_PATH`` with ``ca.pem``, ``cert.pem``, ``key.pem``), or
over ``ssh://`` (keys, and the host's key in ``known_hosts``). Plain TCP is accepted on a
loopback address, or where the target says so (``accept_unauthenticated_daemon``).
The environment's daemon (``DOCKER_HOST``: docker targets without ``docker_host``,
image builds) follows the same rules, at plan time and wherever a client is built; a target's
``docker_tls`` and ``accept_unauthenticated_daemon`` are for its ``docker_host`` only.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigError, DockerError
from ..io import read_json

#: The forms a ``docker_host`` may take.
ADDRESS_FORMS = "tcp://HOST:PORT, ssh://[USER@]HOST[:PORT] or unix:///PATH"
#: The target setting naming a ``tcp://`` daemon's TLS files, and its keys.
TLS_SETTING = "docker_tls"
TLS_KEYS = ("ca_cert", "client_cert", "client_key")
#: The files of each key in a ``DOCKER_CERT_PATH`` folder, as the docker CLI names them.
CERT_PATH_FILES = {"ca_cert": "ca.pem", "client_cert": "cert.pem", "client_key": "key.pem"}
#: The target setting that accepts plain TCP to a daemon on another machine.
UNAUTHENTICATED_SETTING = "accept_unauthenticated_daemon"


def check_address(docker_host: str, named: str = "docker_host") -> None:
    """Check that ``docker_host`` is a Docker daemon address the SDK can use (a
    malformed one was reported as "no Docker daemon answers", and ``ssh://`` without a host
    quietly tried 127.0.0.1:22). ``named``: the setting it comes from, for the message
    (``docker_host``, or ``DOCKER_HOST`` for the environment's).

    Raises:
        ConfigError: an unknown scheme, no host (tcp, ssh), a port that is not a number in
            1..65535, or no socket path (unix); the message names the address and the forms.
    """
    try:
        parts = urlsplit(docker_host)
        port = parts.port  # ValueError when not a number or out of range
        host = parts.hostname
    except ValueError as exc:
        raise ConfigError(
            f"{named} {docker_host!r} cannot be parsed ({exc}); expected {ADDRESS_FORMS}"
        ) from None
    if parts.scheme not in ("tcp", "ssh", "unix"):
        raise ConfigError(
            f"{named} {docker_host!r}: scheme {parts.scheme or 'missing'!r}; "
            f"expected {ADDRESS_FORMS}"
        )
    if parts.scheme == "unix":
        if not parts.path:
            raise ConfigError(f"{named} {docker_host!r}: no socket path; expected unix:///PATH")
        return
    if not host:
        raise ConfigError(f"{named} {docker_host!r}: no host; expected {ADDRESS_FORMS}")
    if port == 0:
        raise ConfigError(f"{named} {docker_host!r}: port 0; expected {ADDRESS_FORMS}")


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a name or an IP address) is this machine's loopback: ``localhost``
    or an address in 127.0.0.0/8 or ::1. Other names are not resolved (a name may point
    elsewhere tomorrow)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Daemon:
    """How one Docker daemon is reached.

    Attributes:
        address: ``tcp://``, ``ssh://`` or ``unix://`` (a target's ``docker_host``, or
            ``DOCKER_HOST``: :func:`resolve_daemon`); "" for the local socket
            (``docker.from_env`` without ``DOCKER_HOST``).
        ca_cert, client_cert, client_key: absolute paths of the PEM files of a ``tcp://``
            daemon over TLS: the CA that signed the daemon's certificate, and this side's
            certificate and key; "" without TLS. Paths only: no key is ever copied.
        tls_from: where those files were named, for messages: ``docker_tls``,
            ``DOCKER_CERT_PATH`` or ``~/.docker`` (``DOCKER_TLS_VERIFY`` without a cert path).
        accept_unauthenticated: plain TCP to another machine was accepted by the target
            (``accept_unauthenticated_daemon``).
    """

    address: str = ""
    ca_cert: str = ""
    client_cert: str = ""
    client_key: str = ""
    tls_from: str = ""
    accept_unauthenticated: bool = False

    @property
    def tls(self) -> bool:
        """Whether the daemon is reached over TLS with both ends verified."""
        return bool(self.ca_cert)

    def setting(self, key: str) -> str:
        """How the configuration names one of :data:`TLS_KEYS`, e.g. ``docker_tls.ca_cert``
        or ``DOCKER_CERT_PATH's ca.pem``."""
        if self.tls_from == TLS_SETTING:
            return f"{TLS_SETTING}.{key}"
        return f"{self.tls_from}'s {CERT_PATH_FILES[key]}"

    def to_json(self) -> str:
        """Canonical JSON of every field (paths, never a key's contents)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict, where: str = "daemon record") -> Daemon:
        """The inverse of :meth:`to_json` (as a dict).

        Raises:
            ConfigError: not an object of exactly these fields, or a field of the wrong type.
        """
        names = {f.name: f.type for f in dataclasses.fields(cls)}
        if not isinstance(d, dict) or set(d) != set(names):
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise ConfigError(f"{where}: expected the keys {sorted(names)}, got {got}")
        for key, value in d.items():
            kind = bool if key == "accept_unauthenticated" else str
            if not isinstance(value, kind):
                raise ConfigError(f"{where}: {key} {value!r}: expected a {kind.__name__}")
        return cls(**d)

    @classmethod
    def read(cls, path: str | os.PathLike) -> Daemon:
        """A daemon record written by ``embryo-bench daemon``.

        Raises:
            DataError: missing or not JSON. ConfigError: as :meth:`from_dict`.
        """
        return cls.from_dict(read_json(path), str(path))


def tls_verify(env) -> bool:
    """Whether the Docker environment asks for TLS with verification, as the docker CLI reads
    it: ``DOCKER_TLS_VERIFY`` set and not empty (any value, "0" included)."""
    return bool(env.get("DOCKER_TLS_VERIFY"))


def resolve_daemon(
    address: str,
    tls: dict | None = None,
    accept_unauthenticated: bool = False,
    env=None,
    check_files: bool = True,
) -> Daemon:
    """How the daemon at ``address`` is reached, checked before anything runs (plan time,
    ``check-config``, ``ship-image``) and where a client is built (:func:`docker_client`).

    Args:
        address: ``tcp://``, ``ssh://`` or ``unix://``; "" for the environment's:
            ``DOCKER_HOST`` resolved as an address (the same rules, with the environment's
            TLS), or the local socket when it is not set.
        tls: a target's ``docker_tls`` ({ca_cert, client_cert, client_key}: paths, ``~``
            expanded, relative ones from the working directory); None to use the Docker
            environment variables (``DOCKER_TLS_VERIFY``, ``DOCKER_CERT_PATH``, default
            ``~/.docker``) for a ``tcp://`` address.
        accept_unauthenticated: the target accepts plain TCP to another machine (a
            ``docker_host`` only: every job reaches the environment's daemon, image builds
            included, without a target's settings).
        env: the environment (default ``os.environ``).
        check_files: check the TLS files (:func:`check_tls_files`); False where they are
            not used (a plan made again in a cluster job on a node: :func:`docker_client`
            checks them where the daemon is used).

    Returns:
        a :class:`Daemon` with absolute paths of the TLS files (a ``tcp://`` address over
        TLS), or none; for "" its address is ``DOCKER_HOST``'s ("" without it).

    Raises:
        ConfigError: a malformed address (:func:`check_address`); ``docker_tls`` for an
            address that is not ``tcp://``; ``docker_tls`` or ``accept_unauthenticated`` for
            the environment's daemon; plain TCP to an address that is not a loopback one
            without ``accept_unauthenticated_daemon`` (naming the settings that give TLS);
            a TLS file that is missing, unreadable, not PEM, or a key that does not match its
            certificate (:func:`check_tls_files`, naming the file and its setting).
    """
    env = os.environ if env is None else env
    if address:
        return _resolve(address, tls, accept_unauthenticated, env, check_files, "docker_host")
    for setting, given in ((TLS_SETTING, tls), (UNAUTHENTICATED_SETTING, accept_unauthenticated)):
        if given:
            raise ConfigError(
                f"{setting} is for a tcp:// docker_host; this target uses the environment's "
                "daemon (DOCKER_HOST), which every job reaches without a target's settings "
                "(TLS: DOCKER_TLS_VERIFY and DOCKER_CERT_PATH): name the daemon in the "
                f"target's docker_host, or remove {setting}"
            )
    environment = env.get("DOCKER_HOST", "")
    if not environment:
        return Daemon()
    return _resolve(environment, None, False, env, check_files, "DOCKER_HOST")


def _resolve(
    address: str, tls, accept_unauthenticated: bool, env, check_files: bool, named: str
) -> Daemon:
    """:func:`resolve_daemon` of a non-empty ``address``, which the setting ``named``
    (``docker_host`` or ``DOCKER_HOST``) gives."""
    check_address(address, named)
    parts = urlsplit(address)
    if parts.scheme != "tcp":
        if tls:
            how = "keys and known_hosts" if parts.scheme == "ssh" else "a local socket"
            raise ConfigError(
                f"{named} {address}: {TLS_SETTING} is for tcp:// addresses; "
                f"{parts.scheme}:// uses {how}: remove {TLS_SETTING}"
            )
        return Daemon(address)
    if tls:
        files = {k: str(Path(tls[k]).expanduser().absolute()) for k in TLS_KEYS}
        source = TLS_SETTING
    elif tls_verify(env):
        folder = env.get("DOCKER_CERT_PATH") or ""
        source = "DOCKER_CERT_PATH" if folder else "~/.docker"
        folder = Path(folder or "~/.docker").expanduser().absolute()
        files = {k: str(folder / name) for k, name in CERT_PATH_FILES.items()}
    elif is_loopback(parts.hostname) or accept_unauthenticated:
        return Daemon(address, accept_unauthenticated=accept_unauthenticated)
    else:
        if named == "DOCKER_HOST":
            how = (
                "set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH, or use an ssh:// address (or, "
                "for a target, name the daemon in its docker_host with "
                f"{UNAUTHENTICATED_SETTING}: true)"
            )
        else:
            how = (
                f"give {TLS_SETTING}: {{ca_cert, client_cert, client_key}} (or set "
                "DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH), use an ssh:// address, or set "
                f"{UNAUTHENTICATED_SETTING}: true"
            )
        raise ConfigError(
            f"{named} {address} is plain TCP to another machine: no authentication "
            f"(whoever reaches that port is root there); {how}"
        )
    daemon = Daemon(
        address, **files, tls_from=source, accept_unauthenticated=accept_unauthenticated
    )
    if check_files:
        check_tls_files(daemon, named)
    return daemon


def _reason(exc: ssl.SSLError) -> str:
    return exc.reason or str(exc)


def check_tls_files(daemon: Daemon, named: str = "docker_host") -> None:
    """Check the TLS files of ``daemon`` with Python's ``ssl`` (the same OpenSSL the SDK
    uses): each readable, the CA and the client certificate PEM certificates, the key the
    client certificate's (unencrypted: the SDK cannot ask for a passphrase). Nothing to check
    without TLS. ``named``: the setting that gives the address, for the message.

    Raises:
        ConfigError: one line naming the file, the setting that names it and what is wrong.
    """
    if not daemon.tls:
        return
    for key in TLS_KEYS:
        path = getattr(daemon, key)
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            what = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror
            raise ConfigError(
                f"{named} {daemon.address}: {daemon.setting(key)} {path}: {what}"
            ) from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for key in ("ca_cert", "client_cert"):
        path = getattr(daemon, key)
        try:
            context.load_verify_locations(cafile=path)
        except ssl.SSLError as exc:
            raise ConfigError(
                f"{named} {daemon.address}: {daemon.setting(key)} {path}: not a PEM "
                f"certificate ({_reason(exc)})"
            ) from None
    try:
        # An empty password: an encrypted key fails here instead of prompting on the terminal.
        context.load_cert_chain(daemon.client_cert, daemon.client_key, password=b"")
    except ssl.SSLError as exc:
        if _reason(exc) == "KEY_VALUES_MISMATCH":
            raise ConfigError(
                f"{named} {daemon.address}: {daemon.setting('client_key')} "
                f"{daemon.client_key} is not the key of {daemon.setting('client_cert')} "
                f"{daemon.client_cert}"
            ) from None
        raise ConfigError(
            f"{named} {daemon.address}: {daemon.setting('client_key')} {daemon.client_key}: "
            f"not an unencrypted PEM private key ({_reason(exc)})"
        ) from None


def channel(client) -> str:
    """How ``client`` reaches its daemon: "unix socket", "ssh", "tls" (both ends verified) or
    "tcp, unauthenticated"."""
    url = client.api.base_url
    if url.startswith("https://"):
        return "tls"
    if url.startswith("http://"):
        return "tcp, unauthenticated"
    return "ssh" if url == "http+docker://ssh" else "unix socket"


def _ssl_reason(text: str) -> str:
    """The OpenSSL reason inside a requests/urllib3 error text, e.g. "[SSL:
    CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer
    certificate", or the text itself."""
    found = re.search(r"\[SSL[^\]]*\][^'\")(]*", text)
    return found.group(0).strip() if found else text


def _ca_only_client(**kwargs):
    """``docker.DockerClient(**kwargs)`` whose requests session ignores the environment:
    requests lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` replace the CA that the SDK's
    TLS config sets (docker/docker-py#2433), so a daemon over TLS would be checked against the
    public CAs instead of its own (and fail against its own). Environment proxies and .netrc
    are not used for the daemon either."""
    import docker

    class CAOnlyAPIClient(docker.APIClient):
        # requests.Session sets trust_env in __init__, before the SDK's first request (its API
        # version): a property that stays False.
        trust_env = property(lambda self: False, lambda self, value: None)

    class CAOnlyClient(docker.DockerClient):
        def __init__(self, **kw):  # DockerClient.__init__ only builds a plain APIClient
            self.api = CAOnlyAPIClient(**kw)

    return CAOnlyClient(**kwargs)


def docker_client(daemon: Daemon | str | None = None, timeout: int = 120):
    """A Docker SDK client for ``daemon`` checked with a ping: a :class:`Daemon` with an
    address (over TLS with its files, checked again: they may have changed since the plan),
    or an address, or None/""/``Daemon()`` for the environment's daemon: resolved first
    (:func:`resolve_daemon`: ``DOCKER_HOST`` as an address, the Docker environment's TLS and
    the refusal of plain TCP to another machine; the local socket without ``DOCKER_HOST``).

    Raises:
        ConfigError: as :func:`resolve_daemon` / :func:`check_tls_files` (a TLS file gone or
            changed since the plan).
        DockerError: the daemon does not answer; the message names the address and, over TLS,
            the CA and client certificate it used.
    """
    # The SDK only when a daemon is asked for: planning host-only workflows, and every
    # training, import this module without needing it.
    import docker
    import docker.tls

    if isinstance(daemon, Daemon) and daemon.address:
        check_tls_files(daemon)
    else:
        daemon = resolve_daemon(daemon if isinstance(daemon, str) else "")
    address = daemon.address or "unix:///var/run/docker.sock"
    try:
        if daemon.address:
            if daemon.tls:
                tls = docker.tls.TLSConfig(
                    client_cert=(daemon.client_cert, daemon.client_key),
                    ca_cert=daemon.ca_cert,
                    verify=True,
                )
                client = _ca_only_client(base_url=daemon.address, tls=tls, timeout=timeout)
            else:
                client = docker.DockerClient(base_url=daemon.address, timeout=timeout)
        else:
            client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # DockerException, requests errors, paramiko errors, ...
        text = str(exc).strip() or "no message"
        if daemon.tls:
            text = _ssl_reason(text)
            hint = (
                f"over TLS with {daemon.setting('ca_cert')} {daemon.ca_cert} and "
                f"{daemon.setting('client_cert')} {daemon.client_cert}: the daemon's "
                "certificate must be signed by that CA and name this address, and the daemon "
                "(--tlsverify --tlscacert) must trust the CA of the client certificate"
            )
        elif "HTTP request to an HTTPS server" in text:
            hint = (
                f"that daemon speaks TLS: give the target {TLS_SETTING} (ca_cert, client_cert, "
                "client_key) or set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH"
            )
        elif address.startswith("ssh://"):
            hint = (
                "over SSH the key and the host's key must be in ~/.ssh (config, known_hosts) "
                "and that user must be able to run `docker system dial-stdio` there"
            )
        else:
            hint = "start dockerd or set DOCKER_HOST / the target's docker_host"
        raise DockerError(
            f"no Docker daemon answers at {address} ({type(exc).__name__}: {text}); {hint}"
        ) from exc
    return client


def daemon_info(daemon: Daemon | str) -> dict:
    """The daemon's ``info()`` (its ``NCPU``, ``Runtimes``, ...), asked with a 20 s timeout:
    what the plan's ``local`` hardware check (:class:`embryo_bench.recording.hardware.LocalProbe`)
    asks of each daemon.

    Raises:
        DockerError: as :func:`docker_client`.
    """
    return docker_client(daemon, timeout=20).info()


def daemon_identity(info: dict) -> dict:
    """Who a Docker daemon is, from its ``info()``: the machine a container ran on.

    Returns:
        dict with ``id`` (the daemon's ID), ``name`` (its host name), ``os``, ``kernel``,
        ``ncpu``, ``memory_mib`` (MemTotal / 2**20), ``server_version``, ``storage_driver``,
        ``cgroup_version`` and ``gpu_runtime`` (True when an ``nvidia`` runtime is there).
    """
    return {
        "id": info.get("ID", ""),
        "name": info.get("Name", ""),
        "os": info.get("OperatingSystem", ""),
        "kernel": info.get("KernelVersion", ""),
        "ncpu": info.get("NCPU", 0),
        "memory_mib": round(info.get("MemTotal", 0) / 2**20),
        "server_version": info.get("ServerVersion", ""),
        "storage_driver": info.get("Driver", ""),
        "cgroup_version": info.get("CgroupVersion", ""),
        "gpu_runtime": "nvidia" in (info.get("Runtimes") or {}),
    }
