"""Rollouts: one reset's :class:`~orsgen.runtime.rollouts.rollout.Rollout` and its record
(``episode``), task choice (``tasks``), the process's metrics (``metrics``), the
trajectory log (``trajectories``) and what the calling TRL trainer knows
(``trainer_facts``).

Above :mod:`orsgen.runtime.sessions`, below the adapter.
"""
