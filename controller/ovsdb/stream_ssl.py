"""SSL remotes (``ssl:IP:PORT``) for the OVSDB connections, configured as C's
``-p/-c/-C/--bootstrap-ca-cert/--ssl-protocols/--ssl-ciphers``.

Design note
-----------
The ``ovs`` library's own ``ssl:`` stream reads three class attributes that
nothing sets unless told to (``load_verify_locations(None)`` then raises a
TypeError out of ``Idl.run()``), lets a failed certificate check escape from
``connect()`` as an exception, and knows neither protocols nor ciphers.
:func:`configure` stores the agent's PKI settings in one :class:`SslConfig`
and registers :class:`AgentSslStream` as the ``ssl:`` stream class for the
whole process, so every ``Stream.open("ssl:...")`` (the Southbound IDL, a
comma-separated list of remotes included) goes through it:

* a missing key, certificate or CA certificate is logged once per minute at
  ERR with C's wording and the open fails with ENOPROTOOPT, so the reconnect
  FSM backs off and retries (the agent keeps running);
* a handshake failure (wrong CA, expired or unknown certificate) is logged at
  WARN (module ``stream_ssl``) with OpenSSL's reason and reported to the
  session as EPROTO: ``reconnect`` then logs the failed attempt and waits,
  exactly the C sequence;
* the peer's host name is not checked, as OVS does not; the certificate must
  chain to the CA certificate;
* a row in the local OVS database's ``SSL`` table (``ovs-vsctl set-ssl``)
  overrides the command-line files, read afresh at each connection attempt.

``--bootstrap-ca-cert=FILE``: when FILE exists it is the CA certificate.
Fetching it from the peer on first contact needs the peer's certificate chain,
which Python 3.11's ``ssl`` module does not expose; that case is logged as an
error and the connection retried, never trusted blindly.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Callable

import ovs.socket_util
import ovs.stream

from controller.vlog import RateLimiter, get_logger

log = get_logger("stream_ssl")
_rl_config = RateLimiter(per_minute=1, burst=1)
_rl_handshake = RateLimiter(per_minute=12, burst=5)

# --ssl-protocols names (lower case) -> ssl.TLSVersion member names; resolved
# only when used, so that an agent without ssl: remotes never touches ssl.
_PROTOCOLS = {"tlsv1": "TLSv1", "tlsv1.1": "TLSv1_1", "tlsv1.2": "TLSv1_2",
              "tlsv1.3": "TLSv1_3"}


@dataclass
class SslConfig:
    private_key: str | None = None
    certificate: str | None = None
    ca_cert: str | None = None
    bootstrap_ca_cert: bool = False
    protocols: str | None = None
    ciphers: str | None = None


CONFIG = SslConfig()
# First row of the local OVS database's SSL table (`ovs-vsctl set-ssl`), or
# None; when present its files win over the command line, as in C.
_ovs_ssl_row: Callable[[], Any] | None = None


def use_ovs_ssl_table(first_row: Callable[[], Any]) -> None:
    global _ovs_ssl_row
    _ovs_ssl_row = first_row


def effective_config() -> SslConfig:
    row = _ovs_ssl_row() if _ovs_ssl_row is not None else None
    if row is None:
        return CONFIG
    return SslConfig(private_key=row.private_key, certificate=row.certificate,
                     ca_cert=row.ca_cert, bootstrap_ca_cert=bool(row.bootstrap_ca_cert),
                     protocols=CONFIG.protocols, ciphers=CONFIG.ciphers)


def parse_protocols(text: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """"TLSv1.2,TLSv1.3" -> (minimum, maximum); ValueError on an unknown name."""
    versions = []
    for word in text.replace(" ", ",").split(","):
        if not word:
            continue
        member = _PROTOCOLS.get(word.lower())
        if member is None:
            raise ValueError(f"{word}: SSL protocol not recognized")
        versions.append(ssl.TLSVersion[member])
    if not versions:
        raise ValueError("at least one SSL protocol must be enabled")
    return min(versions), max(versions)


def configure(private_key: str | None = None, certificate: str | None = None,
              ca_cert: str | None = None, bootstrap_ca_cert: str | None = None,
              protocols: str | None = None, ciphers: str | None = None) -> None:
    """Set the PKI options and make ``ssl:`` streams use them."""
    if protocols:
        parse_protocols(protocols)          # reject bad values at start-up
    CONFIG.private_key = private_key
    CONFIG.certificate = certificate
    CONFIG.ca_cert = bootstrap_ca_cert or ca_cert
    CONFIG.bootstrap_ca_cert = bootstrap_ca_cert is not None
    CONFIG.protocols = protocols
    CONFIG.ciphers = ciphers
    ovs.stream.Stream.register_method("ssl", AgentSslStream)


def make_context(cfg: SslConfig) -> ssl.SSLContext:
    """The client context for `cfg`; ValueError says what is missing."""
    if not cfg.private_key:
        raise ValueError("Private key must be configured to use SSL")
    if not cfg.certificate:
        raise ValueError("Certificate must be configured to use SSL")
    if not cfg.ca_cert:
        raise ValueError("CA certificate must be configured to use SSL")
    if cfg.bootstrap_ca_cert and not os.path.exists(cfg.ca_cert):
        raise ValueError(f"{cfg.ca_cert}: CA certificate bootstrap (fetching the CA "
                         "certificate from the peer) is not supported; install the CA "
                         "certificate in that file")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False          # OVS checks the chain, not the host name
    ctx.verify_mode = ssl.CERT_REQUIRED
    if cfg.protocols:
        ctx.minimum_version, ctx.maximum_version = parse_protocols(cfg.protocols)
    if cfg.ciphers:
        ctx.set_ciphers(cfg.ciphers)
    try:
        ctx.load_verify_locations(cafile=cfg.ca_cert)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"{cfg.ca_cert}: could not load CA certificate ({_reason(exc)})") \
            from None
    try:
        ctx.load_cert_chain(cfg.certificate, cfg.private_key)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"{cfg.certificate}, {cfg.private_key}: could not load certificate "
                         f"and private key ({_reason(exc)})") from None
    return ctx


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason).lower().replace("_", " ")
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


class AgentSslStream(ovs.stream.SSLStream):  # type: ignore[misc]
    """``ssl:`` with the agent's configuration and errors as return values."""

    @staticmethod
    def _open(suffix: str, dscp: int) -> tuple[int, Any]:
        try:
            ctx = make_context(effective_config())
        except ValueError as exc:
            log.err_rl(_rl_config, str(exc))
            return errno.ENOPROTOOPT, None
        address = ovs.socket_util.inet_parse_active(suffix, 0)
        family, sock = ovs.socket_util.inet_create_socket_active(socket.SOCK_STREAM, address)
        if sock is None:
            return family, None
        ssl_sock = ctx.wrap_socket(sock, do_handshake_on_connect=False)
        error = ovs.socket_util.inet_connect_active(ssl_sock, address, family, dscp)
        if not error:
            try:
                ssl_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as exc:
                ssl_sock.close()
                return ovs.socket_util.get_exception_errno(exc), None
        return error, ssl_sock

    def connect(self) -> int:
        try:
            retval: int = super().connect()
        except ssl.SSLError as exc:
            return self._handshake_failed(exc)
        return retval

    def _handshake_failed(self, exc: ssl.SSLError) -> int:
        if isinstance(exc, (ssl.SSLWantReadError, ssl.SSLWantWriteError)):
            return errno.EAGAIN
        if isinstance(exc, ssl.SSLSyscallError):
            return int(ovs.socket_util.get_exception_errno(exc))
        log.warn_rl(_rl_handshake, f"{self.name}: SSL_connect: {_reason(exc)}")
        return errno.EPROTO
