"""The LSP adapter: maps editor requests onto the engine and engine events onto LSP messages.
The only package that may import pygls and lsprotocol."""
