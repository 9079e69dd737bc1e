"""The trust boundary: what a repository, a provider or the model may not do.

- `secrets`: one redaction step for everything stored, notified, logged or sent to the model,
  and the environment child processes get (key variables removed).
- `trust`: content-pinned trust records for workspace config files (`memento trust`).
- `protected`: paths `write`/`edit` change only after the user allows it.
- `confine`: context files (rules, AGENTS.md, WATCHDOG.md…) are read only inside the
  workspace or the user config dir.

Which settings are the user's alone is `memento.config.USER_LEVEL_KEYS`; where settings come
from is `memento.layers`.
"""
