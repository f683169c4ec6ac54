"""The multi-site recovery study's simulators and collectors (``sim.multisite``), and the churn law (``sim.churn``)."""
