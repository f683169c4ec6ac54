"""The collection engine of ``collect run``: a plan expanded into runs, executed, appended to the ledger.
Runs execute in-process, in a local process pool or on Ray; only the engine's process writes.
"""
