"""What generated packages import at training time.

This package depends only on ``openreward`` (imported on first use) and, lazily,
``datasets``. It never imports the generator's dependencies (jinja2, black,
datamodel-code-generator).
"""

from orsgen.runtime.compat import RUNTIME_VERSION

__all__ = ["RUNTIME_VERSION"]
