"""Records: what every room above shares about a rollout (its record, the protocol it is
read through, the ``ors/*`` metrics, what the TRL trainer knows). Above ``sessions``."""
