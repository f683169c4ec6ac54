"""The data behind the figures: runs, traces and commit ledgers loaded from a runs folder and checked.
Nothing is drawn here; every trace is read only after it matches its record's SHA-256.
"""
