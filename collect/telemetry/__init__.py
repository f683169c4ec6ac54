"""Telemetry of a run: sensors that read a meter, the recording of their polls, and its analysis.
``sensors`` are the device drivers, ``recording`` polls them, ``analysis`` turns traces into energy.
"""
