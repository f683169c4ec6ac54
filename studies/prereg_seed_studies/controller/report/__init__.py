"""The controller study's report: its sections in ``reports show``, Markdown and ``reports html``, and
``reports plot --commits`` / ``--family``, registered as plugins (:mod:`reports.sections`) by :mod:`.plugin`.
"""
