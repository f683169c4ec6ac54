"""The controller study's collectors: consistency modes, WAN/site stress families, an adaptive controller.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller).
"""
