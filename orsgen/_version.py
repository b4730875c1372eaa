"""orsgen's version, written once: the package, the CLI, the generator and setuptools
(``pyproject.toml``'s dynamic version) all read it here. A leaf: it imports nothing."""

__version__ = "0.1.0"
