"""The seed studies of prereg-toolkit as plugins: multi-site recovery (with the churn law) and the controller study.

Their collectors register in ``prereg_toolkit.collectors`` (studies/pyproject.toml); ``prereg-studies`` is the
command line of the churn law (:mod:`prereg_seed_studies.cli`). The core packages import nothing from here.
"""
