"""Bad input from the client is logged one line per message, rate-limited: a fuzzer must not
fill the disk, and no traceback (with server paths) reaches the log for what the client sent."""

from __future__ import annotations

import logging
import time


class RateLimitedLog:
    """At most `burst` lines per `seconds`; past that one notice says so, the rest are
    counted, and the count rides on the next line that gets through (a fuzzer must not
    fill the disk)."""

    def __init__(self, logger: logging.Logger, *, burst: int = 20, seconds: float = 10.0) -> None:
        self.logger = logger
        self.burst = burst
        self.seconds = seconds
        self._tokens = float(burst)
        self._last = time.monotonic()
        self.suppressed = 0

    def allow(self) -> bool:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.burst / self.seconds)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        if not self.suppressed:
            self.logger.warning(
                "too many bad messages: at most %d lines per %.0f s, the rest are counted, not logged",
                self.burst,
                self.seconds,
            )
        self.suppressed += 1
        return False

    def warning(self, text: str, *, exc_info: BaseException | None = None) -> None:
        if not self.allow():
            return
        if self.suppressed:
            text += f" ({self.suppressed} similar lines not logged)"
            self.suppressed = 0
        self.logger.warning("%s", text, exc_info=exc_info)


class QuietPygls(logging.Filter):
    """pygls' own warnings and errors about bad input: one line each, no traceback,
    through the same rate limit."""

    def __init__(self, limit: RateLimitedLog) -> None:
        super().__init__()
        self.limit = limit

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        record.exc_info = None
        record.exc_text = None
        return self.limit.allow()


def quiet_pygls(limit: RateLimitedLog) -> None:
    """Put pygls' loggers behind `limit`, one line each, no traceback."""
    quiet = QuietPygls(limit)
    for name, logger in logging.Logger.manager.loggerDict.items():
        if name.startswith("pygls") and isinstance(logger, logging.Logger):
            logger.addFilter(quiet)
