"""Kafka brokers for tests, one module per backend, and the helpers that drive them.

The broker is chosen with the environment variable ``KAFKA_BACKEND`` (``choice``):

``external``
    An already running cluster at ``KAFKA_BOOTSTRAP_SERVERS`` (for example in CI).
``testcontainers``
    A throwaway KRaft container (``container``), published on 127.0.0.1. Needs a container
    engine behind Docker's API (Docker, or podman's service). The image is the official
    ``apache/kafka:4.4.0``; ``KAFKA_IMAGE`` may name another ``apache/kafka`` tag (3.7.0 or
    later) or a Confluent ``cp-kafka`` image of tag 7.0.0 or later (``image``).
``apache``
    Real Apache Kafka (``KAFKA_VERSION``, default 4.4.0), run as a child process on
    127.0.0.1 (``apache``): one JVM as broker and KRaft controller, a fresh log directory per
    session. Its jars come from Maven once, into the per-user jar cache (``JAR_CACHE_DIR``);
    needs Java 17+ and, until the jars are cached, ``mvn`` (``apache_runtime``).
``noida``
    The ``noida-db`` broker from PyPI (``noida``): a single binary that speaks the Kafka wire
    protocol, started as a child process on 127.0.0.1 with a fresh data directory. Needs
    nothing but pip. ``local`` is accepted as its former name.
``auto`` (the default)
    ``external`` if ``KAFKA_BOOTSTRAP_SERVERS`` is set, else ``testcontainers`` if a Docker
    daemon answers and has (or can pull) the image, else ``apache`` if Java and the Kafka
    jars can be had, else ``noida``. A backend passed over for a reason worth fixing (an
    image that cannot be pulled, no mvn) is named in one line with that reason.

``start`` starts the chosen one; ``secured`` is a second Apache Kafka on SASL_SSL. ``topics``
creates, fills and reads topics with confluent-kafka (``clients``).

The modules the plugin imports when it loads (``backend``, ``choice`` and what it asks:
``apache_runtime``, ``image``, ``engine``, ``noida``) import neither confluent-kafka, pyspark
nor a container library at the top: those load when a broker is probed or started. This
package's ``__init__`` imports nothing.
"""
