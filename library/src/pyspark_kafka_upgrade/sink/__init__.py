"""The append-mode file sink: the formats it writes (``formats``, the one list), writing a
query to it (``writer``) and reading every generation's committed output (``reader``)."""
