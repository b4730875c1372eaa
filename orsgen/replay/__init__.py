"""``orsgen replay RUN --out OUT`` (docs/replay.md). The package imports nothing itself:
:mod:`~orsgen.replay.compare` (pure) and :mod:`~orsgen.replay.summary` load no evaluation
code; :mod:`~orsgen.replay.run` replays."""
