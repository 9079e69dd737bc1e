"""The session's transcript: the one projection of its entries and running turn into the
display items every front end draws (`memento.core.transcript`), kept current with patches."""
