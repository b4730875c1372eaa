"""Rollouts: one reset's :class:`~orsgen.runtime.rollouts.rollout.AdapterRollout`, which
drives the rooms below it (the task choice, the trajectory log, the upload), and its
settings (``settings``).

Above :mod:`orsgen.runtime.choosing`, :mod:`orsgen.runtime.trajectories` and
:mod:`orsgen.runtime.upload`; below the adapter.
"""
