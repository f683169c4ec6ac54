"""The console scripts ``prereg``, ``collect``, ``gates`` and ``reports``: argument parsing and exit codes.
The layer above the libraries: only the entry points import it; :mod:`.kit` is their shared plumbing.
"""
