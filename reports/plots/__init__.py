"""``reports plot``: PNG/SVG figures of an evaluation or of one block of runs (matplotlib, an optional extra).
Each figure comes with its text equivalent, printed even when matplotlib is missing.
"""
