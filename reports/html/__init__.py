"""The reviewer's report as one self-contained HTML page (inline SVG, no network), and the Jupyter table.
Rendered from Jinja2 templates (``templates/``) with autoescaping on: values enter them as data.
"""
