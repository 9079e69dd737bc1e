"""One conversation: the store, the context the model sees, the tools and the turn loop.
Imports `core/`, `providers/` and the utilities; never a mechanism or a front end."""
