"""Helpers shared by the test suite: Kafka test backends and deadline-based waiting."""
