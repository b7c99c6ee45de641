"""Use case: ``checkpoint show``, gathered once (``command``) into a typed report, decided
and rendered (``report``)."""
