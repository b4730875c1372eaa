"""Trajectories: the opt-in trajectory log, reading it back, and the per-task table.
Above :mod:`orsgen.runtime.records`, below :mod:`orsgen.runtime.rollouts`."""
