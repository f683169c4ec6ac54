"""The controller study's collectors: consistency modes, WAN/site stress families, an adaptive controller.

* :mod:`.stress` -- stress families drawn from the stratum seed, with infrastructure-uncertainty regions;
* :mod:`.policy` -- modes (``sync``, ``local:H``), the WAN cost model and the controller's rules;
* :mod:`.loop` -- the one cycle loop both collectors run, with the commit ledger and its invariants;
* :mod:`.sim` -- ``sim.controller`` (learning from a declared prior; evidence ``prior``);
* :mod:`.collector` -- ``torch.controller`` (the real tiny LM on per-site replicas; torch imported
  only when a run starts, in :mod:`.replicas`).
"""
