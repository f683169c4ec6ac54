"""The reviewer's report in a terminal (``reports show``, ``prereg show``): rich renderables.
Plain text when the output is not a TTY or NO_COLOR is set; the words come from :mod:`reports.words`.
"""
