"""`verify`: reconcile the written output with the source, on the team's own data."""
