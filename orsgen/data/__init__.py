"""Datasets built from evaluation runs: rejection-sampling SFT (``orsgen sft``), preference
pairs (``orsgen pairs``) and the rows both read (``trainset``)."""
