"""The plan: schema, strict YAML loading, canonical form and hash, locks and amendments, the ``prereg`` CLI.

Public entry points: :func:`prereg.plan.load_plan` / :func:`prereg.plan.parse_plan` (validate a plan),
:mod:`prereg.lock` (freeze, verify, amend), :mod:`prereg.schema` (the ``prereg/v1`` models).
"""

from prereg._version import __version__

__all__ = ["__version__"]
