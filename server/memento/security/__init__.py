"""The trust boundary: what a repository, a provider or the model may not do.

- `secrets`: one redaction step for everything stored, notified, logged or sent to the model,
  and the environment child processes get (key variables removed).
- `trust`: content-pinned trust records for workspace config files (`memento trust`,
  whose command is `memento.trust_cli`).
- `confine`: context files (rules, AGENTS.md, WATCHDOG.md…) are read only inside the
  workspace or the user config dir.

Which settings are the user's alone is `memento.config.USER_LEVEL_KEYS`; where settings come
from is `memento.layers`.
"""
