"""A pipeline's generations, shared by run, upgrade and inspect: where each one's directories
are (``layout``), the single-writer guard on them (``run_lock``), which generation is
current (``generations``) and the signature a generation is recorded with (``signature``)."""
