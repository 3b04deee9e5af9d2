"""Core types and configuration: fragments, config fields and their checks, tuned configs, RL math."""
