"""The ``command`` collector: a plan runs the researcher's own program (:mod:`collect.collectors.command.collector`)."""
