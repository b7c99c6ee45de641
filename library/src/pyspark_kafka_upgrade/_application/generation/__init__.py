"""What the use cases share about a pipeline's generations: which one is current
(``generations``) and the signature a generation is recorded with (``signature``, derived
from the settings and the project's events and query, without Spark)."""
