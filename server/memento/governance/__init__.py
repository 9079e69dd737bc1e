"""Context governance: token accounting, prune → shake → compact, append-only context.

Import the modules themselves (`memento.governance.tokens`, …); this package imports
nothing at load time.
"""
