"""Internal. The pure core: planner, reconciliation, query logic, formats, settings.

It imports no pyspark, py4j or matplotlib; it reads what the adapters gathered.
"""
