"""The files a run keeps beside the ledger (``RUNS/traces``): each trace kind's reader and writer.
A trace is read only after it matches the SHA-256 its ledger record holds (:mod:`.check`).
"""
