"""What every benchmark shares, written once: the broker and its topics, the Spark session
and the windowed job, side-by-side timing, process figures, the environment."""
