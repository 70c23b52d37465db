"""Generates a throwaway CA, server and client certificates with the openssl CLI for TLS tests."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    rogue_key: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _leaf(name: str, cn: str, ca: str, ca_key: str, cwd: Path, ext: str) -> None:
    _run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-subj",
        f"/CN={cn}",
        "-out",
        f"{name}.csr",
        cwd=cwd,
    )
    (cwd / f"{name}.ext").write_text(ext)
    _run(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        ca,
        "-CAkey",
        ca_key,
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        f"{name}.crt",
        "-extfile",
        f"{name}.ext",
        cwd=cwd,
    )


def make_certs(directory: Path) -> Certs:
    """A CA signing a localhost server cert and a client cert; a second CA signs a rogue client."""
    directory.mkdir(parents=True, exist_ok=True)
    for ca in ("ca", "rogue-ca"):
        _run(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{ca}.key",
            "-out",
            f"{ca}.crt",
            "-days",
            "2",
            "-subj",
            f"/CN={ca}",
            cwd=directory,
        )
    server_ext = "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    client_ext = "extendedKeyUsage=clientAuth\n"
    _leaf("server", "localhost", "ca.crt", "ca.key", directory, server_ext)
    _leaf("client", "synthesis", "ca.crt", "ca.key", directory, client_ext)
    _leaf("rogue", "rogue", "rogue-ca.crt", "rogue-ca.key", directory, client_ext)
    d = directory
    return Certs(
        d / "ca.crt",
        d / "server.crt",
        d / "server.key",
        d / "client.crt",
        d / "client.key",
        d / "rogue.crt",
        d / "rogue.key",
    )
