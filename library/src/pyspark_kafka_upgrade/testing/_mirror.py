"""Does the parser's pure-Python mirror agree with Spark on a project's own events?

``upgrade plan`` reads event times with the mirror, without a JVM. A project checks it on
records of its own schema: every record the mirror is sure of must get Spark's verdict and
event time exactly; where it is unsure, the plan replays more, which is safe. The scan
judges a batch at once on a fast path that must answer as the mirror does, record by record:
it is held to that too.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pyspark_kafka_upgrade import steps
from pyspark_kafka_upgrade._application.upgrade.event_fast_path import FastEventParser
from pyspark_kafka_upgrade._core.query.columns import EVENT_TIME, MALFORMED_REASON
from pyspark_kafka_upgrade._core.query.event_parser import EventParser
from pyspark_kafka_upgrade._domain.values.project import Project
from pyspark_kafka_upgrade.testing._frames import kafka_rows, project_recipe


def mirror_disagreements(
    spark: SparkSession, project: Project, values: Sequence[bytes | None], *overrides: str
) -> list[str]:
    """One line per record where the mirror, sure of itself, differs from Spark. Refuses
    samples the mirror is sure of none of: they would check nothing."""
    recipe = project_recipe(project, *overrides)
    stamps = [1_795_000_000_123] * len(values)
    parsed = steps.parse_events(kafka_rows(spark, values, timestamps_ms=stamps), recipe)
    spark_answers = {
        row.offset: (row[MALFORMED_REASON], row.us)
        for row in parsed.select(
            "offset", MALFORMED_REASON, F.unix_micros(EVENT_TIME).alias("us")
        ).collect()
    }
    mirror = EventParser(
        events=recipe.events,
        time_source=recipe.time_source,
        time_field=recipe.time_field,
        max_value_bytes=recipe.max_value_bytes,
    )
    found = []
    fast = FastEventParser(mirror, recipe.max_value_bytes)
    stamps_us = [stamp * 1000 for stamp in stamps]
    for offset, (scanned, mirrored) in enumerate(
        zip(
            fast.event_times_ms(values, stamps_us),
            map(mirror.event_time_ms, values, stamps_us),
            strict=True,
        )
    ):
        if scanned != mirrored:
            found.append(
                f"record {offset} {values[offset]!r}: the mirror gives {mirrored}, "
                f"the scan's fast path {scanned}"
            )
    sure = 0
    for offset, value in enumerate(values):
        mine = mirror.parse(value, stamps_us[offset])
        if mine.unsure is not None:
            continue
        sure += 1
        theirs = spark_answers[offset]
        if (mine.reason, mine.event_time_us) != theirs:
            found.append(
                f"record {offset} {value!r}: Spark gives {theirs}, the mirror "
                f"{(mine.reason, mine.event_time_us)}"
            )
    if not sure:
        raise AssertionError("the mirror is unsure of every sample: they check nothing")
    return found
