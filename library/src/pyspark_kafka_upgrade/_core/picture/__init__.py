"""The picture of an upgrade plan: what it shows, decided without a plotting library."""
