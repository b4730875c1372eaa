"""Jinja templates, one per emitted file; shipped in the wheel as orsgen._templates."""
