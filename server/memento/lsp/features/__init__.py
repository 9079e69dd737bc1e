"""LSP features, one module per area; each exposes `register(server)`."""
