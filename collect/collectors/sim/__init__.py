"""Simulators behind the built-in collectors: the churn law and multi-site recovery."""
