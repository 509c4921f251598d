"""A certificate authority of the test's own, and a certificate it signs for 127.0.0.1: an
HTTPS site no default trust store vouches for."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path


@dataclass
class TestCA:
    ca: Path  # the CA's certificate (PEM): what --ca-bundle is given
    cert: Path  # the site's certificate, signed by the CA
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_ca(directory: Path, self_signed: bool = False, expired: bool = False) -> TestCA:
    """A CA and a site certificate it signs; ``self_signed``: the site's certificate is the CA's
    own (a self-signed server), ``ca`` and ``cert`` one file; ``expired``: the site's
    certificate expired half an hour ago."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, issuer: x509.Name | None, key: ec.EllipticCurvePrivateKey,
              signer: ec.EllipticCurvePrivateKey, ca: bool,
              until: datetime.timedelta = datetime.timedelta(hours=1)) -> x509.Certificate:
        name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, subject)])
        builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + until)
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca or self_signed:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        return builder.sign(signer, hashes.SHA256())

    ca_key, site_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(
        ec.SECP256R1())
    ca_cert = build("minicrawl test CA", None, ca_key, ca_key, ca=True)
    site_cert = build("127.0.0.1", ca_cert.subject, site_key, ca_key, ca=False,
                      until=datetime.timedelta(minutes=-30 if expired else 60))
    if self_signed:
        site_cert, site_key = ca_cert, ca_key
    paths = TestCA(directory / "ca.pem", directory / "site.pem", directory / "site-key.pem")
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(site_cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(site_key.private_bytes(serialization.Encoding.PEM,
                                                 serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
    return paths
