"""LSP features, one module per area; each holds a `LanguageFeature` (memento.lsp.feature)."""
