"""Why the upgrade refuses: each error says what is wrong and what to do about it."""

from __future__ import annotations

from pyspark_kafka_upgrade._domain.errors import PipelineError


class PlanningError(PipelineError):
    """The planner cannot produce a restart it can vouch for; the message says why."""


class NoCommittedBatchError(PlanningError):
    """The old checkpoint has no committed batch, so there is nothing to upgrade from."""


class LedgerAheadError(PlanningError):
    """The ledger records batches the checkpoint never committed: they belong together no more."""


class UnknownWatermarkError(PlanningError):
    """Neither the checkpoint nor the ledger holds W for the last committed batch."""


class InconsistentInputsError(PlanningError):
    """The facts contradict each other (offsets going backwards, two versions of a batch)."""


class UpgradeError(PipelineError):
    """The upgrade cannot go on in the state the pipeline is in; nothing was changed."""

    exit_code = 3


class TableMovedError(UpgradeError):
    """The settings move the one table every generation appends to; the settings are at
    fault, so the code is a usage error's."""

    exit_code = 2


class NoLedgerError(UpgradeError):
    exit_code = 2


class UnknownPipelineError(UpgradeError):
    exit_code = 2


class PlanAlreadyAppliedError(UpgradeError):
    """Generation N+1 was planned and applied already; `run` starts it."""


class RollbackRefusedError(UpgradeError):
    pass


class PlanFileError(UpgradeError):
    """A plan file that cannot be applied as it is; the message says why. Nothing changed."""

    exit_code = 2


class PlanFormatError(PlanFileError):
    """A document that is not an upgrade plan: the message names the field."""


class PlanFormatVersionError(PlanFormatError):
    """A plan written by a newer version of the pipeline, in a format this one cannot read."""


class PlanMismatchError(PlanFileError):
    """A plan made for another pipeline, or another root."""


class PlanFileAppliedError(PlanFileError):
    """The plan was applied already (and possibly run, or rolled back)."""


class StalePlanError(PlanFileError):
    """The world moved since the plan was made: applying it would not do what was reviewed."""
