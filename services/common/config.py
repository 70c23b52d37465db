"""Environment-variable readers with validation: every service setting is read here.

A setting that is absent takes its default; one that is set but invalid (not a number, out of
range, not one of the choices, a half-configured TLS pair) stops the process at start-up with an
error that names the setting, the value and what it accepts (``SettingError``). A typo in a
ConfigMap then fails the rollout loudly instead of running with a default nobody asked for.
(The stack launcher, the CLIs and tracing read a few variables of their own: see README.)
"""

from __future__ import annotations

import builtins
import difflib
import ipaddress
import logging
import math
import os
import re
import socket
import ssl
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NoReturn, TypeVar

from services.common.logs import JsonFormatter
from services.common.urls import display_url, split_url

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret value that never shows up in repr, str or logs."""

    _value: str

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('********')" if self._value else "Secret('')"

    __str__ = __repr__


class SettingError(RuntimeError):
    """A setting is missing or invalid: the process must not start. The message names it."""


class MissingSettingError(SettingError):
    """A required setting is absent."""


class InvalidSettingError(SettingError, ValueError):
    """A setting is set to a value it does not accept (or one another setting rules out)."""


class UnknownSettingError(SettingError, ValueError):
    """A setting was given by name (``--set``, an in-process stack's overrides) that nothing
    reads: a misspelt name would otherwise run with the default nobody asked for."""


class RecordingEnviron(Mapping[str, str]):
    """An environment that remembers every name looked up in it (``read``), whether or not it
    held a value: which of the given settings a configuration actually reads."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def close_names(name: str, known: Iterable[str]) -> list[str]:
    """The known setting names ``name`` most likely meant: the same name under a service's
    prefix (``ENTAILMENT_MODEL_DIR`` → ``VALIDATOR_ENTAILMENT_MODEL_DIR``), else near spellings."""
    names = sorted(set(known))
    prefixed = [n for n in names if n.endswith("_" + name)]
    return prefixed or difflib.get_close_matches(name, names, n=3, cutoff=0.8)


def exit_on_setting_error(service: str, error: SettingError, *, json_line: bool = True) -> NoReturn:
    """End start-up on a bad setting: a line on stderr naming it, exit status 2 (a usage
    error, as for a bad command line), so the orchestrator's log shows why.

    With ``json_line`` (a service; not the stack's own command line) the same message goes
    first as a CRITICAL JSON line, as the service logs everything else, so a log pipeline that
    keeps JSON lines only keeps it too; the plain line stays last, for `kubectl logs | tail -1`."""
    line = f"{service}: configuration error: {error}"
    if json_line:
        record = logging.LogRecord(__name__, logging.CRITICAL, __file__, 0, line, None, None)
        print(JsonFormatter(service).format(record), file=sys.stderr)
    print(line, file=sys.stderr, flush=True)
    raise SystemExit(2) from error


class EnvReader:
    """Reads typed settings under one prefix; an invalid value raises ``InvalidSettingError``."""

    def __init__(self, prefix: str, environ: Mapping[str, str] | None = None) -> None:
        self.prefix = prefix
        self._env = os.environ if environ is None else environ

    def _raw(self, name: str) -> str | None:
        value = self._env.get(self.prefix + name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def is_set(self, name: str) -> bool:
        """Whether ``<prefix><name>`` holds a value (blank counts as unset, as when reading)."""
        return self._raw(name) is not None

    def invalid(self, name: str, raw: str, expected: str) -> InvalidSettingError:
        """The error for ``<prefix><name>=raw``, saying what the setting accepts."""
        return InvalidSettingError(f"{self.prefix}{name}={raw!r}: expected {expected}")

    def _parsed(
        self,
        name: str,
        default: T,
        parse: Callable[[str], T],
        check: Callable[[T], bool],
        expected: str,
    ) -> T:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = parse(raw)
        except ValueError:
            raise self.invalid(name, raw, expected) from None
        if not check(value):
            raise self.invalid(name, raw, expected)
        return value

    def str(self, name: str, default: str, *, choices: tuple[str, ...] | None = None) -> str:
        """A string; with ``choices``, one of them, matched without regard to case and returned
        as the choice is spelled ("debug" reads as "DEBUG")."""
        if choices is None:
            return self._parsed(name, default, builtins.str, lambda v: True, "a string")
        by_case = {c.lower(): c for c in choices}
        if len(by_case) != len(choices):
            raise ValueError(f"{self.prefix}{name}: choices differ only in case: {choices}")

        def parse(raw: builtins.str) -> builtins.str:
            if raw.lower() not in by_case:
                raise ValueError(raw)
            return by_case[raw.lower()]

        return self._parsed(name, default, parse, lambda v: True, f"one of {', '.join(choices)}")

    def int(
        self,
        name: builtins.str,
        default: builtins.int,
        *,
        minimum: builtins.int | None = None,
        maximum: builtins.int | None = None,
    ) -> builtins.int:
        return self._parsed(
            name,
            default,
            builtins.int,
            lambda v: _in_range(v, minimum, maximum),
            f"an integer{_range_text(minimum, maximum)}",
        )

    def float(
        self,
        name: builtins.str,
        default: builtins.float,
        *,
        minimum: builtins.float | None = None,
        maximum: builtins.float | None = None,
    ) -> builtins.float:
        return self._parsed(
            name,
            default,
            _parse_float,
            lambda v: _in_range(v, minimum, maximum),
            f"a number{_range_text(minimum, maximum)}",
        )

    def probability(self, name: builtins.str) -> builtins.float | None:
        """An optional threshold in [0, 1]: unset gives None, which callers read as "keep the
        model's calibrated value"."""
        value = self.float(name, -1.0, minimum=0.0, maximum=1.0)
        return None if value < 0 else value

    def bool(self, name: builtins.str, default: builtins.bool) -> builtins.bool:
        return self._parsed(
            name, default, _parse_bool, lambda v: True, "true or false (or 1/0, yes/no, on/off)"
        )

    def secret(self, name: builtins.str) -> Secret:
        return Secret(self._raw(name) or "")

    def base_url(
        self,
        name: builtins.str,
        default: builtins.str,
        *,
        api_key: Secret,
        allow_plaintext: builtins.str,
    ) -> builtins.str:
        """An OpenAI-compatible endpoint's base URL (``""`` stays off): ``http`` or ``https``
        with a host and no ``user:password@`` (a credential belongs in the API key setting).

        Plain ``http`` with an API key sends the key in clear, so it is refused unless the host
        is loopback, or a cluster-local Service name (``*.svc``, ``*.svc.cluster.local``) and
        ``<PREFIX><allow_plaintext>`` is true (an operator's explicit choice). An error never
        shows the URL's userinfo, query or fragment."""
        url = self.str(name, default)
        if not url:
            return url
        setting = f"{self.prefix}{name}"
        parts = split_url(url)
        if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise InvalidSettingError(
                f"{setting}={display_url(url)!r}: expected an http:// or https:// URL with a host"
            )
        if "@" in parts.netloc:
            raise InvalidSettingError(
                f"{setting}: a URL with user:password@ is refused (its credential would be "
                "logged and sent as written); set the API key setting instead"
            )
        if parts.scheme.lower() == "https" or not api_key:
            return url
        host = parts.hostname.lower().rstrip(".")
        if _loopback(host):
            return url
        opt_in = f"{self.prefix}{allow_plaintext}"
        cluster_local = host.endswith((".svc", ".svc.cluster.local"))
        if cluster_local and self.bool(allow_plaintext, False):
            return url
        if cluster_local:
            advice = f"use https, or set {opt_in}=true to accept plain http to this Service"
        else:
            advice = (
                "use https (plain http is accepted for loopback, or for a cluster-local Service, "
                f"*.svc or *.svc.cluster.local, with {opt_in}=true)"
            )
        raise InvalidSettingError(
            f"{setting}={display_url(url)!r}: plain http would send the API key in clear; {advice}"
        )

    def redis_url(self, name: builtins.str) -> builtins.str:
        """A Redis URL (``""`` stays off), checked with redis-py's own parser without
        connecting (``redis_store.url_problem``), so a typo stops start-up here, named, instead
        of raising from redis once the models have loaded. An error never shows the URL's
        userinfo (the password) or query."""
        url = self.str(name, "")
        if not url:
            return url
        # Imported here: redis is an adapter's library, loaded only where a URL is configured.
        from services.common.redis_store import url_problem

        if problem := url_problem(url):
            raise InvalidSettingError(
                f"{self.prefix}{name}={display_url(url)!r}: {problem}; expected "
                "redis://[user:password@]host[:port][/db], rediss://... or unix:///path"
            )
        return url

    def grpc_target(self, name: builtins.str, default: builtins.str) -> builtins.str:
        """A gRPC target a channel dials (``grpc_target_problem`` says what is accepted)."""
        target = self.str(name, default)
        if problem := grpc_target_problem(target):
            raise InvalidSettingError(
                f"{self.prefix}{name}={target!r}: {problem}; expected a gRPC target: host:port, "
                "[IPv6]:port, dns:///host:port, ipv4:addr:port[,addr:port...], "
                "ipv6:[addr]:port[,...], unix:/path or xds:///name"
            )
        return target

    def host(self, name: builtins.str, default: builtins.str) -> builtins.str:
        """An address a server listens on, held bare (``unbracketed``): an IP address (``::``
        or ``[::]`` for every interface, ``0.0.0.0`` for IPv4's) or a host name."""
        raw = self.str(name, default)
        host = unbracketed(raw)
        if not (_is_ip(host) or _is_hostname(host)):
            raise self.invalid(
                name, raw, "an IP address (:: or 0.0.0.0 for every interface) or a host name"
            )
        return host

    def required(self, name: builtins.str) -> builtins.str:
        raw = self._raw(name)
        if raw is None:
            raise MissingSettingError(f"{self.prefix}{name} must be set")
        return raw


def _loopback(host: builtins.str) -> builtins.bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# One label of a host name (RFC 1123; "_" too, as DNS SRV-style names use it).
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
# gRPC name-resolver schemes a target may name: those grpcio's C-core registers (grpc/doc/
# naming.md; xds needs GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG). A scheme it has no
# resolver for is refused: gRPC reads such a target whole as a DNS name, the channel is created,
# and every call fails UNAVAILABLE "Misformatted domain name" (http://host:port, dsn:///host:port,
# and vsock:cid:port, which grpcio's wheels do not register: 1.85 reads it as a DNS name).
GRPC_SCHEMES = ("dns", "ipv4", "ipv6", "unix", "unix-abstract", "xds")
# A URI scheme's spelling (RFC 3986), for telling "vsock:3:5000" from a host name.
_SCHEME_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def _is_ip(host: builtins.str, version: builtins.int | None = None) -> builtins.bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return version is None or address.version == version


def _is_hostname(host: builtins.str) -> builtins.bool:
    name = host[:-1] if host.endswith(".") else host
    return 0 < len(name) <= 253 and all(_LABEL.match(label) for label in name.split("."))


def _host_port_problem(text: builtins.str, *, ip: builtins.int | None = None) -> str | None:
    """What is wrong with ``host:port`` (``[IPv6]:port``; with ``ip``, an address of that IP
    version only), or None. The port is required, 1 to 65535: gRPC's default (443) is never
    what a service here listens on."""
    if ip == 6 and not text.startswith("["):
        return f"{text!r} is not [IPv6 address]:port"
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if ip == 4:
            return f"{text!r} is not an IPv4 address:port"
        if not bracket or not _is_ip(host, 6):
            return f"{text!r} is not [IPv6 address]:port"
        if not port.startswith(":"):
            return f"{text!r} has no port after its IPv6 address"
        port = port[1:]
    else:
        host, colon, port = text.rpartition(":")
        if not colon:
            return f"{text!r} has no port"
        if ":" in host and _is_ip(host, 6):
            return f"{text!r}: an IPv6 address goes in brackets, [{host}]:{port}"
        if ip is not None and not _is_ip(host, ip):
            return f"{host!r} is not an IPv{ip} address"
        if not (_is_ip(host, 4) or _is_hostname(host)):
            return f"{host!r} is not a host name or an IP address"
    if not (port.isdigit() and 1 <= int(port) <= 65535):
        return f"the port {port!r} is not a number from 1 to 65535"
    return None


def grpc_target_problem(target: builtins.str) -> str | None:
    """What is wrong with ``target`` as a gRPC channel target, or None: ``host:port``,
    ``[IPv6]:port``, ``dns:[//authority/]host:port``, ``ipv4:addr:port[,addr:port...]``,
    ``ipv6:[addr]:port[,...]``, ``unix:path`` / ``unix:///path``, ``unix-abstract:name``,
    ``xds:[//authority]/name`` (the name is the xDS server's to know: not checked). Any other
    scheme (``http://host:port``, ``vsock:3:5000``) is refused: gRPC has no resolver for it,
    reads the target as a DNS name, reports the channel ready to use, and fails every call
    "Misformatted domain name"."""
    scheme, colon, rest = target.partition(":")
    scheme = scheme.lower()
    if colon and scheme in GRPC_SCHEMES:
        if scheme == "xds":
            name = rest[2:].partition("/")[2] if rest.startswith("//") else rest
            return None if name.strip("/") else "no name after xds: (xds:///host:port)"
        if scheme in ("unix", "unix-abstract"):
            return None if rest.strip("/") else "no socket path after unix:"
        if scheme == "dns":
            if rest.startswith("//"):
                _authority, slash, rest = rest[2:].partition("/")
                if not slash:
                    return "dns://authority needs /host:port after it (dns:///host:port)"
            return _host_port_problem(rest)
        addresses = rest.split(",")
        for address in addresses:
            if problem := _host_port_problem(address, ip=4 if scheme == "ipv4" else 6):
                return problem
        return None
    if "://" in target:
        address = target.split("://", 1)[1].strip("/")
        write = repr(address) if _host_port_problem(address) is None else "host:port"
        return f"{scheme}:// is not a gRPC name-resolver scheme (write {write} or dns:///host:port)"
    host = target.rpartition(":")[0]
    if ":" in host and not _is_ip(host.strip("[]"), 6) and _SCHEME_WORD.fullmatch(scheme):
        # "vsock:3:5000": a scheme gRPC has no resolver for, not a host; said as such rather
        # than as an IPv6 address without its brackets.
        return (
            f"{scheme}: is not a gRPC name-resolver scheme (grpcio has no resolver for it and "
            f"would look the whole target up as a DNS name; it has {', '.join(GRPC_SCHEMES)})"
        )
    return _host_port_problem(target)


def _in_range(
    value: builtins.float, minimum: builtins.float | None, maximum: builtins.float | None
) -> builtins.bool:
    return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)


def _range_text(minimum: builtins.float | None, maximum: builtins.float | None) -> str:
    low, high = _number(minimum), _number(maximum)
    if low and high:
        return f" from {low} to {high}"
    if low:
        return f" of at least {low}"
    if high:
        return f" of at most {high}"
    return ""


def _number(value: builtins.float | None) -> str:
    """A limit as written: integers in full (67108864, not 6.71089e+07), others as repr."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(value)


def _parse_float(raw: str) -> float:
    value = float(raw)
    if not math.isfinite(value):  # "nan" and "inf" parse, but no setting means them
        raise ValueError(raw)
    return value


def _parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Optional TLS / mutual TLS; plaintext (all paths empty) is for a trusted network only."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    require_client_auth: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file and self.key_file)

    @classmethod
    def from_env(cls, env: EnvReader) -> TlsSettings:
        """A server's ``<PREFIX>TLS_*``. TLS is on with a certificate and its key; a CA file
        adds client certificates, required with ``TLS_REQUIRE_CLIENT_AUTH``. Anything set that
        would not take effect (a certificate without its key, a CA or client authentication
        without a certificate, client authentication without a CA) is an error, never a silent
        fall-back to plaintext."""
        tls = cls._read(env, require_client_auth=env.bool("TLS_REQUIRE_CLIENT_AUTH", False))
        p = env.prefix
        if (tls.ca_file or tls.require_client_auth) and not tls.enabled:
            raise InvalidSettingError(
                f"{p}TLS_CA_FILE / {p}TLS_REQUIRE_CLIENT_AUTH need {p}TLS_CERT_FILE and "
                f"{p}TLS_KEY_FILE: without them the server would listen in plaintext"
            )
        if tls.require_client_auth and not tls.ca_file:
            raise InvalidSettingError(
                f"{p}TLS_REQUIRE_CLIENT_AUTH=true needs {p}TLS_CA_FILE, the CA that client "
                "certificates are checked against"
            )
        return tls

    @classmethod
    def client_from_env(cls, env: EnvReader) -> TlsSettings:
        """A client's ``<PREFIX>TLS_*`` (synthesis's channels to its backends): TLS is on with a
        CA file to check the servers against; a certificate and key add a client certificate
        (mutual TLS). A certificate or key without the CA, or ``TLS_REQUIRE_CLIENT_AUTH``
        (a server's setting), is an error."""
        p = env.prefix
        if env.bool("TLS_REQUIRE_CLIENT_AUTH", False):
            raise InvalidSettingError(
                f"{p}TLS_REQUIRE_CLIENT_AUTH is a server setting; a client has nothing to require"
            )
        tls = cls._read(env, require_client_auth=False)
        if (tls.cert_file or tls.key_file) and not tls.ca_file:
            raise InvalidSettingError(
                f"{p}TLS_CERT_FILE / {p}TLS_KEY_FILE need {p}TLS_CA_FILE: TLS to the backends "
                "is on only with a CA to check them against"
            )
        return tls

    def check_server_files(self, prefix: str) -> None:
        """Raise ``InvalidSettingError`` naming ``<prefix>TLS_CERT_FILE``, ``TLS_KEY_FILE`` or
        ``TLS_CA_FILE`` and why, when the server's files cannot serve TLS: one that cannot be
        read, a certificate file with no PEM certificate, a key that is not a PEM private key,
        is encrypted or is not the certificate's, a CA file with no PEM certificate. gRPC
        reports each of these as the same "Failed to bind" as an address in use, so the server
        checks them (with Python's OpenSSL, which reads PEM as gRPC does) before it adds its
        port. Nothing to check when TLS is off."""
        if not self.enabled:
            return
        cert = (f"{prefix}TLS_CERT_FILE", self.cert_file)
        key = (f"{prefix}TLS_KEY_FILE", self.key_file)
        ca = (f"{prefix}TLS_CA_FILE", self.ca_file)
        for setting, path in (cert, key, ca):
            if not path:
                continue
            try:
                with open(path, "rb"):
                    pass
            except OSError as error:
                raise InvalidSettingError(
                    f"{setting}={path!r}: cannot be read ({error.strerror or error})"
                ) from error
        for setting, path in (cert, ca):
            if path and (problem := _certificates_problem(path)):
                raise InvalidSettingError(f"{setting}={path!r}: {problem}")
        encrypted = False

        def no_passphrase() -> bytes:
            nonlocal encrypted
            encrypted = True
            return b""

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(cert[1], key[1], password=no_passphrase)
        except ssl.SSLError as error:
            named = f"{key[0]}={key[1]!r}"
            if encrypted:
                problem = "the key is encrypted (gRPC reads a key without a passphrase)"
            elif error.reason == "KEY_VALUES_MISMATCH":
                problem = f"the key is not the key of {cert[0]}={cert[1]!r}"
            else:
                problem = f"not a PEM private key (OpenSSL: {error.reason or error})"
            raise InvalidSettingError(f"{named}: {problem}") from error

    @classmethod
    def _read(cls, env: EnvReader, *, require_client_auth: bool) -> TlsSettings:
        tls = cls(
            cert_file=env.str("TLS_CERT_FILE", ""),
            key_file=env.str("TLS_KEY_FILE", ""),
            ca_file=env.str("TLS_CA_FILE", ""),
            require_client_auth=require_client_auth,
        )
        if bool(tls.cert_file) != bool(tls.key_file):
            raise InvalidSettingError(
                f"{env.prefix}TLS_CERT_FILE and {env.prefix}TLS_KEY_FILE must be set together"
            )
        return tls


def _certificates_problem(path: str) -> str | None:
    """Why ``path`` holds no certificate OpenSSL can read (PEM), or None."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError as error:
        return f"holds no PEM certificate (OpenSSL: {error.reason or error})"
    return None


# gRPC client load-balancing policies a channel may use (services/common/channels.py).
LOAD_BALANCING = ("round_robin", "pick_first")
# Calls a server handles at once (``<SVC>_MAX_CONCURRENT_RPCS``; 0 = no limit): more are refused
# RESOURCE_EXHAUSTED (reason OVERLOADED) before any work; health checks are never counted or
# refused. This default is retrieval's and the validator's, which only synthesis calls: one
# synthesis call sends up to 1 + MAX_QUESTION_PARTS (9) retrievals side by side, so it leaves
# room for one synthesis replica at its own limit (64; tests/unit/synthesis/test_limits.py keeps
# 64 x 9 within it). More synthesis replicas than retrieval ones can exceed it: synthesis then
# asks once more (channels.call_idempotent), and reports UNAVAILABLE after that.
MAX_CONCURRENT_RPCS = 1024


def unbracketed(host: str) -> str:
    """A host held bare (``::``, not ``[::]``): the metrics server binds it as written, and
    host_port() brackets it for gRPC, so both forms of the setting work."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def bind_error(host: str, port: int) -> OSError | UnicodeError | None:
    """Why ``port`` on ``host`` cannot be listened on now (None when it can): the lookup's
    error for a host that does not resolve (``socket.gaierror``, or UnicodeError for a name
    IDNA refuses), else the first address of the host that cannot be bound (a port in use, an
    address not of this machine). With SO_REUSEADDR, as the servers bind, so a connection of an
    earlier run still in TIME_WAIT is no obstacle. One check for the servers' start-up error
    (``GrpcService``) and for ``stack up``'s look at the ports before it starts anything."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        return error
    for family, kind, proto, _, sockaddr in found:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(sockaddr)
            except OSError as error:
                return error
    return None


def host_port(host: str, port: int) -> str:
    """``host:port`` as gRPC parses an address: an IPv6 host in brackets (``[::]:50051``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Settings every gRPC server shares, read under its own prefix (e.g. RETRIEVAL_PORT)."""

    host: str
    port: int
    grace_s: float
    drain_delay_s: float
    metrics_port: int
    max_message_bytes: int
    log_level: str
    tls: TlsSettings
    # Connections older than this are closed (after a grace for calls in flight), so clients
    # re-resolve a headless Service and spread over replicas added since; 0 = never.
    max_connection_age_s: float = 0.0
    max_connection_age_grace_s: float = 30.0
    # Calls handled at once, health checks aside; more are RESOURCE_EXHAUSTED. 0 = no limit.
    max_concurrent_rpcs: int = MAX_CONCURRENT_RPCS

    @classmethod
    def from_env(
        cls,
        env: EnvReader,
        *,
        default_port: int,
        default_metrics_port: int,
        default_max_concurrent_rpcs: int = MAX_CONCURRENT_RPCS,
    ) -> ServerSettings:
        global_env = EnvReader("", env._env)
        return cls(
            host=env.host("HOST", "127.0.0.1"),
            port=env.int("PORT", default_port, minimum=0, maximum=65535),
            grace_s=env.float("GRACE_S", 10.0, minimum=0.0, maximum=600.0),
            drain_delay_s=env.float("DRAIN_DELAY_S", 1.0, minimum=0.0, maximum=60.0),
            metrics_port=env.int("METRICS_PORT", default_metrics_port, minimum=-1, maximum=65535),
            max_message_bytes=env.int(
                "MAX_MESSAGE_BYTES", 4 * 1024 * 1024, minimum=64 * 1024, maximum=64 * 1024 * 1024
            ),
            log_level=global_env.str(
                "LOG_LEVEL",
                "INFO",
                choices=("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL"),
            ),
            tls=TlsSettings.from_env(env),
            max_connection_age_s=env.float(
                "MAX_CONNECTION_AGE_S", 0.0, minimum=0.0, maximum=7 * 24 * 3600.0
            ),
            max_connection_age_grace_s=env.float(
                "MAX_CONNECTION_AGE_GRACE_S", 30.0, minimum=0.0, maximum=3600.0
            ),
            max_concurrent_rpcs=env.int(
                "MAX_CONCURRENT_RPCS", default_max_concurrent_rpcs, minimum=0, maximum=1_000_000
            ),
        )


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """A judge endpoint (issue 17), read under a service's prefix plus ``JUDGE_``.

    Off unless ``base_url`` is set. ``band_low``/``band_high`` bound the local score that
    counts as uncertain (None: the caller's default band). Zero per-minute budgets are
    unlimited; ``cache_url`` empty means no verdict cache.
    """

    base_url: str = ""
    model: str = ""
    api_key: Secret = Secret("")
    timeout_s: float = 10.0
    max_concurrency: int = 4
    items_per_call: int = 8
    max_items_per_request: int = 8
    max_tokens_per_request: int = 8_000
    calls_per_minute: int = 0
    tokens_per_minute: int = 0
    seconds_per_minute: float = 0.0
    logprobs: bool = False
    min_score: float = 0.5
    # "numbered" (batched, any instruction-following model) or "document-claim" (one claim per
    # call in the format checker models such as Bespoke-MiniCheck-7B are trained on).
    prompt: str = "numbered"
    band_low: float | None = None
    band_high: float | None = None
    cache_url: str = ""
    cache_ttl_s: int = 86_400
    # Signs every cached verdict (HMAC-SHA256); an entry without a valid signature is a miss.
    # Required with ``cache_url`` (``from_env`` and ``build_judge`` refuse one without it):
    # unsigned entries would let whoever can write to Redis change a verdict.
    cache_key: Secret = Secret("")
    # Where these were read ("VALIDATOR_JUDGE_"), so an error can name the setting.
    env_prefix: str = "JUDGE_"

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)

    @classmethod
    def from_env(cls, env: EnvReader) -> JudgeSettings:
        """Read ``<PREFIX>JUDGE_*``; a judge without a model name must not start."""
        judge = EnvReader(env.prefix + "JUDGE_", env._env)
        api_key = judge.secret("API_KEY")
        base_url = judge.base_url(
            "BASE_URL", "", api_key=api_key, allow_plaintext="ALLOW_PLAINTEXT"
        )
        settings = cls(
            base_url=base_url,
            model=judge.required("MODEL") if base_url else "",
            api_key=api_key,
            timeout_s=judge.float("TIMEOUT_S", 10.0, minimum=0.05, maximum=600.0),
            max_concurrency=judge.int("MAX_CONCURRENCY", 4, minimum=1, maximum=256),
            items_per_call=judge.int("ITEMS_PER_CALL", 8, minimum=1, maximum=64),
            max_items_per_request=judge.int("MAX_ITEMS_PER_REQUEST", 8, minimum=1, maximum=200),
            max_tokens_per_request=judge.int(
                "MAX_TOKENS_PER_REQUEST", 8_000, minimum=100, maximum=1_000_000
            ),
            calls_per_minute=judge.int("CALLS_PER_MINUTE", 0, minimum=0),
            tokens_per_minute=judge.int("TOKENS_PER_MINUTE", 0, minimum=0),
            seconds_per_minute=judge.float("SECONDS_PER_MINUTE", 0.0, minimum=0.0),
            logprobs=judge.bool("LOGPROBS", False),
            min_score=judge.float("MIN_SCORE", 0.5, minimum=0.0, maximum=1.0),
            prompt=judge.str("PROMPT", "numbered", choices=("numbered", "document-claim")),
            band_low=judge.probability("BAND_LOW"),
            band_high=judge.probability("BAND_HIGH"),
            cache_url=judge.redis_url("CACHE_URL"),
            cache_ttl_s=judge.int("CACHE_TTL_S", 86_400, minimum=1, maximum=30 * 86_400),
            cache_key=judge.secret("CACHE_KEY"),
            env_prefix=judge.prefix,
        )
        settings.require_signed_cache()
        return settings

    def require_signed_cache(self) -> None:
        """A verdict cache without a signing key is a ``MissingSettingError``: whoever could
        write to its Redis could decide a verdict (audit LOW-4)."""
        if self.cache_url and not self.cache_key:
            p = self.env_prefix
            raise MissingSettingError(
                f"{p}CACHE_KEY must be set when {p}CACHE_URL is set (it signs the cached "
                "verdicts; unsigned, whoever can write to that Redis decides them)"
            )
