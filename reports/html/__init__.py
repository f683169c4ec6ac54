"""The reviewer's report as one self-contained HTML page (inline SVG, no network), and the Jupyter table.
Every value from an artifact or a ledger is HTML-escaped before it reaches the markup.
"""
