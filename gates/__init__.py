"""Matching runs to the plan, invalidators, verdicts, the decision and the ``gates`` CLI."""
