"""rooms (filled in by its own issue)."""
