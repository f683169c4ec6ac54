"""Rendering plans, evaluations and telemetry for people (terminal, Markdown)."""
