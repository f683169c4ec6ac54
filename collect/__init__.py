"""Producing runs: collectors, telemetry sensors and samplers, the run ledger, the ``collect`` CLI."""
