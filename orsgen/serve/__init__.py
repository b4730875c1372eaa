"""``orsgen serve``: an environment as an ORS server, from a Python file or from a run's
recording (:mod:`orsgen.serve.recording`)."""
