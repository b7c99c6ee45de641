"""Use cases ``config show`` (``command``) and ``connector fetch`` (``connector``)."""
