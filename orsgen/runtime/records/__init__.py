"""Records: what every room above shares about a rollout. Its record (``episode``: calls,
state, outcome, usage), the protocol rewards read it through (``protocol``), the
process's health metrics counted from outcomes (``metrics``) and what the calling TRL
trainer knows (``trainer_facts``).

Above :mod:`orsgen.runtime.sessions`, below the rooms that use them.
"""
