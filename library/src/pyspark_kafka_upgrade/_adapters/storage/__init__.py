"""Files on any filesystem, without a JVM: locations and URIs through pyarrow
(``filesystem``), and the single-writer guard on a generation (``run_lock``)."""
