"""What goes wrong with a server, in a module that loads no SDK (the engine imports it early)."""


class NotRunning(Exception):
    """The server could not be started (the reason is the message)."""
