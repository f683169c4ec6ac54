"""The ``torch.multisite`` collector: a tiny LM trained through the outages of ``sim.multisite``.

torch is an optional extra (``prereg-seed-studies[torch]``): :mod:`.collector` imports it only inside a run;
:mod:`.markov` and :mod:`prereg_seed_studies.multisite.harness` need only numpy.
"""
