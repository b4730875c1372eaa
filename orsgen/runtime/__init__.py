"""What generated packages import at training time: only ``openreward`` (on first use) and,
lazily, ``datasets``; never the generator's dependencies (jinja2, black, datamodel-code-generator).
"""

from orsgen.runtime.compat import RUNTIME_VERSION

__all__ = ["RUNTIME_VERSION"]
