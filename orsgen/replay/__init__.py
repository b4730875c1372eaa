"""``orsgen replay RUN --out OUT``: an environment's behaviour under review. Every recorded
rollout of an evaluation run is replayed (its task's session, its recorded calls in order,
through the generated package; no model) and compared with the recording: rewards, where the
episode finished, tool results, calls the environment now refuses.

The package imports nothing itself: :mod:`orsgen.replay.compare` (pure) and
:mod:`orsgen.replay.summary` load no more than they need, :mod:`orsgen.replay.run` replays.
"""
