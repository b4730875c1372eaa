"""The generator's pipeline: a target through its snapshot and package section to files on
disk (``run``), with versioning, the checks of ``orsgen check`` and the atomic write."""
