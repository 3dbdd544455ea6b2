"""Output formats: text (full and concise), JSON, statistics."""
