"""orsgen: snapshot an ORS environment and generate a typed TRL adapter package."""

__version__ = "0.1.0"
