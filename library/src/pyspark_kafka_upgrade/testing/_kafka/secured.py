"""A secured Apache Kafka for tests: SASL_SSL, SCRAM and PLAIN logins, a throwaway CA, ACLs.

One broker on 127.0.0.1, as the ``apache`` backend runs it, with three listeners:

- ``SASL_SSL`` for clients: TLS with a certificate for 127.0.0.1 and localhost, signed by a
  CA made when the broker starts (PEM files, which Java's client and librdkafka both read);
  logins by SCRAM-SHA-512 (users created at run time) or PLAIN (one user, fixed at start).
- ``PLAINTEXT``, only so that tests can point a SASL client at a plaintext listener.
- ``CONTROLLER`` (SASL_PLAINTEXT, PLAIN) for KRaft, used by the broker itself.

KRaft's ``StandardAuthorizer`` checks every request; only the admin is a super user, and
nothing is allowed that no ACL allows. Tests grant a pipeline's user what it needs with
:meth:`SecuredKafka.allow`.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import (  # type: ignore[attr-defined, unused-ignore]
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyspark_kafka_upgrade._adapters.kafka.credentials import LOGIN_MODULES
from pyspark_kafka_upgrade.testing._kafka.apache import ApacheBroker, apache_broker
from pyspark_kafka_upgrade.testing._kafka.backend import Progress, print_progress
from pyspark_kafka_upgrade.testing._kafka.clients import connect_admin
from pyspark_kafka_upgrade.testing._kafka.listeners import Listeners

SCRAM = "SCRAM-SHA-512"
PLAIN = "PLAIN"
_ADMIN_USER = "admin"
PLAIN_USER = "plain-pipeline"
# A test run lasts minutes; a day covers a debugger left open.
_CERTIFICATE_LIFETIME = datetime.timedelta(days=1)
_ADMIN_TIMEOUT_S = 30.0
# The operations a pipeline's user may be granted on its topic, by their names in kafka-acls.
OPERATIONS = {"Read": AclOperation.READ, "Describe": AclOperation.DESCRIBE}


@dataclass(frozen=True)
class Login:
    user: str
    password: str
    mechanism: str


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a throwaway CA and the broker's key and certificate chain."""

    ca: Path
    broker_keystore: Path
    # A second CA that signed nothing the broker shows: a client trusting it must refuse.
    untrusted_ca: Path


def make_throwaway_tls(directory: Path) -> TlsFiles:
    """A CA, a certificate it signed for 127.0.0.1 and localhost, and an unrelated CA."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_certificate = _certificate_authority("throwaway test CA")
    _, stranger = _certificate_authority("a CA the broker does not use")
    broker_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    broker_certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_certificate.subject)
        .public_key(broker_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _CERTIFICATE_LIFETIME)
        .add_extension(
            # Both clients check the host name against these (Java: "https" by default).
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(
        ca=directory / "ca.pem",
        broker_keystore=directory / "broker.pem",
        untrusted_ca=directory / "untrusted-ca.pem",
    )
    files.ca.write_bytes(_pem(ca_certificate))
    files.untrusted_ca.write_bytes(_pem(stranger))
    # Kafka's PEM key store: an unencrypted PKCS#8 key, then the chain.
    files.broker_keystore.write_bytes(
        broker_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        + _pem(broker_certificate)
        + _pem(ca_certificate)
    )
    files.broker_keystore.chmod(0o600)
    return files


def _certificate_authority(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _CERTIFICATE_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, certificate


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def jaas_line(mechanism: str, user: str, password: str, extra: str = "") -> str:
    return f'{LOGIN_MODULES[mechanism]} required username="{user}" password="{password}"{extra};'


class SecuredListeners:
    """SASL_SSL and PLAINTEXT for clients, SASL_PLAINTEXT for the controller."""

    ports = 3

    def __init__(self, tls: TlsFiles, admin: Login, plain_user: Login) -> None:
        self._tls = tls
        self._admin = admin
        self._plain_user = plain_user
        # Set with the ports; a retry after a port was taken picks new ones.
        self.plaintext_bootstrap_servers = ""

    def listeners(self, ports: Sequence[int]) -> Listeners:
        secured, plaintext, controller = ports
        self.plaintext_bootstrap_servers = f"127.0.0.1:{plaintext}"
        admin = self._admin
        # The broker logs in as the admin to itself and to its controller; PLAIN's users
        # are the ones its JAAS line lists.
        plain_users = (
            f' user_{admin.user}="{admin.password}"'
            f' user_{self._plain_user.user}="{self._plain_user.password}"'
        )
        return Listeners(
            f"127.0.0.1:{secured}",
            {
                "listeners": (
                    f"SASL_SSL://127.0.0.1:{secured},PLAINTEXT://127.0.0.1:{plaintext},"
                    f"CONTROLLER://127.0.0.1:{controller}"
                ),
                "advertised.listeners": (
                    f"SASL_SSL://127.0.0.1:{secured},PLAINTEXT://127.0.0.1:{plaintext}"
                ),
                "listener.security.protocol.map": (
                    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"
                ),
                "inter.broker.listener.name": "SASL_SSL",
                "sasl.enabled.mechanisms": f"{SCRAM},{PLAIN}",
                "sasl.mechanism.inter.broker.protocol": PLAIN,
                "sasl.mechanism.controller.protocol": PLAIN,
                "listener.name.controller.sasl.enabled.mechanisms": PLAIN,
                "listener.name.controller.plain.sasl.jaas.config": jaas_line(
                    PLAIN, admin.user, admin.password, f' user_{admin.user}="{admin.password}"'
                ),
                "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas_line(
                    PLAIN, admin.user, admin.password, plain_users
                ),
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                    f"{LOGIN_MODULES[SCRAM]} required;"
                ),
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self._tls.broker_keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self._tls.ca),
                "authorizer.class.name": (
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
                ),
                "super.users": f"User:{admin.user}",
                "allow.everyone.if.no.acl.found": "false",
            },
            admin_client=librdkafka_login(admin, self._tls.ca),
        )


def librdkafka_login(login: Login, ca: Path) -> dict[str, str]:
    """librdkafka's settings for ``login`` over SASL_SSL, trusting ``ca``."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": login.mechanism,
        "sasl.username": login.user,
        "sasl.password": login.password,
        "ssl.ca.location": str(ca),
    }


@dataclass(frozen=True)
class SecuredKafka:
    """A running secured broker, its TLS files and its users."""

    bootstrap_servers: str
    # The same broker's PLAINTEXT listener, for clients that should be refused.
    plaintext_bootstrap_servers: str
    tls: TlsFiles
    admin: Login
    # The PLAIN user; SCRAM users are made with add_scram_user.
    plain_user: Login
    broker: ApacheBroker

    @property
    def admin_client(self) -> dict[str, str]:
        """librdkafka settings of the super user: for the helpers' ``client=``."""
        return librdkafka_login(self.admin, self.tls.ca)

    def add_scram_user(self, user: str, password: str) -> Login:
        """Create (or reset) a SCRAM-SHA-512 user; it may do nothing until :meth:`allow`."""
        admin = connect_admin(self.bootstrap_servers, self.admin_client)
        upsert = UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
        )
        for future in admin.alter_user_scram_credentials(
            [upsert], request_timeout=_ADMIN_TIMEOUT_S
        ).values():
            future.result(timeout=_ADMIN_TIMEOUT_S)
        return Login(user, password, SCRAM)

    def allow(self, user: str, topic: str, operations: Sequence[str]) -> None:
        """Allow ``user`` the named operations (``Read``, ``Describe``) on ``topic`` alone."""
        bindings = [
            AclBinding(
                ResourceType.TOPIC,
                topic,
                ResourcePatternType.LITERAL,
                f"User:{user}",
                "*",
                OPERATIONS[operation],
                AclPermissionType.ALLOW,
            )
            for operation in operations
        ]
        admin = connect_admin(self.bootstrap_servers, self.admin_client)
        for future in admin.create_acls(bindings, request_timeout=_ADMIN_TIMEOUT_S).values():
            future.result(timeout=_ADMIN_TIMEOUT_S)

    def client_options(self, login: Login) -> dict[str, str]:
        """The ``kafka.options`` a pipeline logs in with as ``login``: no password in them.

        Java's names, as both connectors take them; the password comes from
        ``kafka.sasl_password_env`` or ``kafka.sasl_password_file``.
        """
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": login.mechanism,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.tls.ca),
        }


@contextmanager
def start_secured_kafka(
    env: Mapping[str, str], progress: Progress | None = None
) -> Iterator[SecuredKafka]:
    """Make the TLS files and start the broker; stop it and remove everything on exit.

    ``progress`` hears one-line notes (jars being resolved); the default prints them on
    stderr.
    """
    admin = Login(_ADMIN_USER, secrets.token_urlsafe(18), PLAIN)
    plain_user = Login(PLAIN_USER, f"plain-{secrets.token_urlsafe(18)}", PLAIN)
    with tempfile.TemporaryDirectory(prefix="kafka-test-tls-") as directory:
        tls = make_throwaway_tls(Path(directory))
        layout = SecuredListeners(tls, admin, plain_user)
        with apache_broker(env, progress or print_progress, layout) as broker:
            yield SecuredKafka(
                bootstrap_servers=broker.bootstrap_servers,
                plaintext_bootstrap_servers=layout.plaintext_bootstrap_servers,
                tls=tls,
                admin=admin,
                plain_user=plain_user,
                broker=broker,
            )
