"""Certificates made by the tests: a CA and a server certificate signed by it (trustme).

Neo4j reads ``private.key`` (PKCS#8 PEM) and ``public.crt`` (the chain, leaf first) from one
directory; clients get ``ca.pem``. A second, unrelated CA stands for "the wrong CA".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization


@dataclass(frozen=True)
class Certificates:
    server_dir: Path  # private.key + public.crt, for the server
    ca_file: Path  # the CA that signed the server certificate
    wrong_ca_file: Path  # a CA that signed nothing here
    names: tuple[str, ...]  # the names the server certificate carries


def make_certificates(directory: Path, *names: str) -> Certificates:
    """A CA, a server certificate for ``names`` (DNS names or IP addresses), and an unrelated CA."""
    ca, wrong = trustme.CA(), trustme.CA()
    leaf = ca.issue_cert(*names)
    server_dir = directory / "server"
    server_dir.mkdir(parents=True, exist_ok=True)
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    (server_dir / "private.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (server_dir / "public.crt").write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    wrong.cert_pem.write_to_path(str(directory / "wrong-ca.pem"))
    for path in (directory / "ca.pem", directory / "wrong-ca.pem"):
        path.chmod(0o644)  # the sandbox reads them as its own user
    return Certificates(server_dir, directory / "ca.pem", directory / "wrong-ca.pem", names)
