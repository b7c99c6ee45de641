"""Application layer: the use cases the CLI offers, composed from the building blocks."""
