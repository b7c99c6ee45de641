"""A project's command line: ``cli.main(PROJECT, argv)`` runs one command, ``cli.console``
is its console script.

One module per command group (``_run``, ``_upgrade``, ``_verify``, ``_checkpoint``,
``_output``, ``_config``, ``_connector``) builds its parser with the shared options of
``_usage`` and imports the use case it calls only when it runs: ``--help``, and every other
command, load none of it (the CLI's start-up is part of an upgrade's downtime).
"""

from pyspark_kafka_upgrade.cli._main import console, main

__all__ = ["console", "main"]
