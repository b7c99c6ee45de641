"""Values every layer reads and writes, checked: intervals, metric specs and topic names
(``validation``), offsets (``offsets``), typed JSON fields (``json_fields``), instants
(``clock``) and secrets masked in text (``redaction``). Standard library only."""
