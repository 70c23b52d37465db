"""What the test machine's network offers (tests that need IPv6 skip without it)."""

from __future__ import annotations

import socket


def ipv6_loopback() -> bool:
    """Whether a socket can bind IPv6 loopback (``::1``) here."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True
