"""``collect import``: a table of runs made elsewhere (CSV, JSON lines, Parquet) turned into ledger records.
Every row is checked against the frozen plan; a table that does not fit is refused whole.
"""
