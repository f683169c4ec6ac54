"""What a recorded trace can honestly say: update periods, a run's energy and each phase's, in joules.
Every number comes with guaranteed bounds; collectors, gates and reports use these same functions.
"""
