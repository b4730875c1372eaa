"""Trajectories: the opt-in trajectory log (``writer``: one line per rollout), reading it
back (``reader``) and the per-task table it folds into (``task_table``).

Above :mod:`orsgen.runtime.records`, below :mod:`orsgen.runtime.rollouts`.
"""
