"""The pytest plugin (``plugin``, loaded by the ``pytest11`` entry point) and the helpers a
project's tests use: real Kafka (``kafka_backends``), one SparkSession (``spark``), static
frames (``frames``), the parser mirror's check (``mirror``), what ``upgrade plan`` and
``run`` see of an edit (``signatures``), the commands its docs show (``docs``), and the
upgrade proved on the project's own events (``proof``). The library's own proofs use the
rest: the oracle, the append-mode simulator, the fake world, a standalone cluster and driver
processes."""
