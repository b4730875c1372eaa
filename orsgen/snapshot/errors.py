class TargetError(Exception):
    """The target cannot be reached or is not a usable ORS environment (exit code 2)."""
