"""The reviewer's report of an evaluation as GitHub-flavoured Markdown.
The words come from :mod:`reports.words`; every value from the artifact is escaped.
"""
