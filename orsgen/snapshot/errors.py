class TargetError(Exception):
    """The target cannot be reached or is not a usable ORS environment (exit code 2)."""


class SnapshotError(ValueError):
    """A snapshot file is missing, malformed or of an unknown format."""
