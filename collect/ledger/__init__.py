"""The run ledger (``RUNS/ledger.jsonl``): its record format, hash chain, atomic appends and writer lock.
:mod:`.store` owns the format and is the one reader and writer; the other modules are its parts.
"""
