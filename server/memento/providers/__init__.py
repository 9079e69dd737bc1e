"""Model providers: each wire format streams a `core.provider.ModelRequest` as events.
Imports `core/`, `config`, `security` and `localmodel`; never `session/`."""
