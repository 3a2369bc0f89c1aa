"""Certificates for TLS tests, made with the `openssl` command in a directory the test owns.

    pki = TestPKI(tmp_path)
    ca = pki.authority("Test CA")
    server = pki.issue(ca, "127.0.0.1", server=True)      # SAN IP:127.0.0.1
    with Origin(tls=(server.cert, server.key, None)) as origin: ...
    pin = pki.public_key_pin(server)                        # "sha256//…" for CURLOPT_PINNEDPUBLICKEY

EC P-256 keys (fast to make), unencrypted PEM, valid for two days.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    name: str
    cert: str
    key: str


class TestPKI:
    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _openssl(self, *args: str) -> bytes:
        return subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.directory).stdout

    def _files(self, name: str) -> tuple[str, str]:
        return str(self.directory / f"{name}.pem"), str(self.directory / f"{name}.key")

    def authority(self, name: str) -> Issued:
        """A self-signed certificate authority."""
        cert, key = self._files(name.replace(" ", "_"))
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                      "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
                      "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        return Issued(name, cert, key)

    def issue(self, ca: Issued, name: str, *, server: bool = False) -> Issued:
        """A leaf certificate signed by `ca`: for a server at the IP address `name`, or a client."""
        stem = name.replace(" ", "_") + ("-server" if server else "-client")
        cert, key = self._files(stem)
        csr = str(self.directory / f"{stem}.csr")
        extensions = self.directory / f"{stem}.ext"
        usage = f"subjectAltName=IP:{name}\nextendedKeyUsage=serverAuth\n" if server else "extendedKeyUsage=clientAuth\n"
        extensions.write_text("basicConstraints=CA:FALSE\n" + usage)
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                      "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
        self._openssl("x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial",
                      "-out", cert, "-days", "2", "-extfile", str(extensions))
        return Issued(name, cert, key)

    def public_key_pin(self, issued: Issued) -> str:
        """`sha256//` and the base64 SHA-256 of the certificate's SubjectPublicKeyInfo (DER)."""
        public = self._openssl("x509", "-in", issued.cert, "-pubkey", "-noout")
        der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=public, check=True,
                             capture_output=True).stdout
        return "sha256//" + base64.b64encode(hashlib.sha256(der).digest()).decode()
