"""The pytest plugin (to come)."""
