"""Values every layer reads and writes, checked: intervals, metric specs and topic names
(``validation``), offsets (``offsets``), typed JSON fields (``json_fields``), instants
(``clock``), secrets masked in text (``redaction``), a generation's directories (``layout``),
window arithmetic (``windows``), words for plans (``words``), the extension points
(``catalog``) and what a project declares (``project``). Standard library only."""
