"""(filled in by a later chapter)."""
__all__: list = []
