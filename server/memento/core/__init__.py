"""The engine's vocabulary, at the bottom of the package graph: messages, session entries,
events, and the provider request/stream types. Both `providers/` and `session/` build on
it; it imports only `security.secrets` (events are redacted as they are published)."""
