"""The ``torch.multisite`` collector: a tiny LM trained through the outages of ``sim.multisite``.

torch is an optional extra: only the modules of this package import it, and nothing imports them
at start-up (the engine loads ``collect.collectors.torchrun.collector`` when a plan names the collector, and
that module imports torch only inside ``run``). :mod:`collect.collectors.torchrun.markov` and
:mod:`collect.collectors.sim.harness` need only numpy.
"""
