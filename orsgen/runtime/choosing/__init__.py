"""Choosing tasks: which task each reset gets (``tasks`` is the entry). Above
:mod:`orsgen.runtime.records`, below :mod:`orsgen.runtime.rollouts`."""
