"""Integrations with other tools: Ray Tune trainables and search spaces."""
