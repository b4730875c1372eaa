"""Rollouts: one reset's ``AdapterRollout``, which drives the rooms below it (choosing,
trajectories, upload), and its settings. Below the adapter."""
