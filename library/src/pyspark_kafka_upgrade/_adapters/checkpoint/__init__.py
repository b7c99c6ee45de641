"""Reading a Structured Streaming checkpoint through ``storage``, without a JVM
(``reader``); the formats themselves are parsed in ``formats``."""
