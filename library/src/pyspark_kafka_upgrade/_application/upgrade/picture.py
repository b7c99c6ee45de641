"""`--plot FILE` of `upgrade plan` and `upgrade show`: the plan's picture, from the real ledger.

Gather (the old generation's batches from the ledger, where its query started each
partition), decide what to draw (``picture.layout``, pure), render (``plot.render``).
"""

from __future__ import annotations

from pathlib import Path

from pyspark_kafka_upgrade._adapters.kafka.initial_offsets import load_initial_offsets
from pyspark_kafka_upgrade._adapters.plot.matplotlib_draw import check_plot_path, write_picture
from pyspark_kafka_upgrade._core.picture.layout import plan_picture
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.history import ledger_facts
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.store import OffsetStore
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.offsets import flatten

__all__ = ["check_plot_path", "draw_plan"]


def draw_plan(store: OffsetStore, plan: UpgradePlan, path: Path) -> str:
    """Write the picture of ``plan`` to ``path``; the sentence that says where."""
    records = store.batches(plan.pipeline, plan.from_generation)
    batches = ledger_facts(records)
    try:
        stored = load_initial_offsets(
            GenerationLayout(plan.root, plan.from_generation).initial_offsets
        )
    except PipelineError:
        stored = None  # the boxes of the first batch are left out, nothing else
    picture = plan_picture(plan, batches, None if stored is None else flatten(stored))
    try:
        write_picture(picture, path)
    except PipelineError as error:
        return f"No picture: {error}. The plan itself is unaffected."
    except Exception as error:  # any plotting failure: the plan, written already, stands
        return (
            f"No picture: matplotlib failed ({type(error).__name__}: {error}). The plan itself "
            "is unaffected."
        )
    drawn = len(picture.panels)
    return (
        f"Picture of the plan written to {path} ({drawn} of {len(plan.partitions)} partitions "
        "drawn, each with its batches, W, the open windows and the restart offset)."
    )
