"""``orsgen validate``: an environment probed for the defects that waste a training run
(a grader a degenerate action games, a reward that changes, a split that leaks, state shared
between sessions, a server that fails on schema-valid calls), before any GPU is spent.
:func:`validate` returns a :class:`ValidationResult` of :class:`Finding` s and each check's
:class:`CheckStatus`; docs/validating.md describes every check."""

from orsgen.validation.result import CHECKS, CheckStatus, Finding, ValidationResult
from orsgen.validation.run import validate

__all__ = ["CHECKS", "CheckStatus", "Finding", "ValidationResult", "validate"]
