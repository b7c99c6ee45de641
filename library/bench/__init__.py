"""The library's benchmarks: one harness, every figure a ratio measured side by side.

    python -m bench run            # every benchmark, full size (make bench)
    python -m bench run --quick    # every benchmark once on small data (make bench-quick, CI)
    python -m bench report         # the history of bench/results/ as a picture

Read from the top: ``cli`` runs the benchmarks of ``benchmarks/`` and renders ``table``;
``kit`` holds what they share; ``record`` is the results file's typed record.
"""
