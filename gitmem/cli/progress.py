"""Progress of long work on stderr, when stderr is a terminal: a Rich bar, started late.

The library never prints: its long operations take a ``progress(done, total)`` callback
(``Gitmem.verify``, ``Gitmem.import_legacy``, ``Gitmem.set_read_progress``). A
:class:`ProgressBar` is such a callback. It imports Rich and draws only once the work is
big enough to be worth a bar (``min_total`` items) and has lasted ``delay`` seconds, so
short runs and piped runs never pay for the import nor see a flicker.
"""

from __future__ import annotations

import time
from typing import IO, Any

__all__ = ["ProgressBar"]

#: Work below this many items finishes too fast for a bar.
MIN_TOTAL = 200
#: Seconds of work before the bar appears.
DELAY_S = 0.3


class ProgressBar:
    """A ``progress(done, total)`` callback drawing a transient Rich bar on ``stream``.

    Args:
        stream: where to draw (the command's stderr; the caller checks it is a terminal).
        label: what the work is ("verifying", "importing").
        min_total: no bar for less work than this many items.
        delay: seconds before the bar appears.
    """

    def __init__(self, stream: IO[str], label: str, min_total: int = MIN_TOTAL,
                 delay: float = DELAY_S) -> None:
        self.stream = stream
        self.label = label
        self.min_total = min_total
        self.delay = delay
        self._started = time.monotonic()
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int) -> None:
        """Record that ``done`` of ``total`` items are finished (the bar ends at ``total``)."""
        if self._progress is None:
            if total < self.min_total or done >= total or time.monotonic() - self._started < self.delay:
                return
            self._open(total)
        self._progress.update(self._task, completed=done, total=total)
        if done >= total:
            self.close()

    def _open(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=Console(file=self.stream), transient=True,
        )
        self._task = self._progress.add_task(self.label, total=total)
        self._progress.start()

    def close(self) -> None:
        """Take the bar off the screen (if it was drawn); later calls draw a new one."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._started = time.monotonic()
