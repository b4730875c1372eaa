"""Generated ORS adapter packages (one subpackage per environment)."""
