"""Telemetry sensors: one abstract interface and its backends (simulated, NVML, replayed traces).
A backend is opened by name (``open_sensor('sim:update_ms=100')``) through :mod:`.registry`.
"""
