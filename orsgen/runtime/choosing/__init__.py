"""Choosing tasks: which task each reset gets. ``tasks`` is the entry (``TaskChoice``,
the samplers per stream); ``chooser`` the default uniform seeded passes; ``curriculum``
the pass-rate curriculum with its ``pools`` and ``prior``; ``streams`` one sampler per
(class, server, split), ``handoff`` AsyncGRPO's checkpoint exchange and ``ranks`` the
share of several processes.

Above :mod:`orsgen.runtime.records`, below :mod:`orsgen.runtime.rollouts`.
"""
