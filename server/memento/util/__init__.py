"""Small shared utilities with no knowledge of the engine: atomic file writes, file locks,
the background-task registry, JavaScript-compatible helpers. Imports nothing of Memento."""
