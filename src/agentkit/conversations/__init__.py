"""conversations (filled in by its own issue)."""
