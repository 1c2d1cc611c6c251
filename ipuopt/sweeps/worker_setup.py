"""Run in each local Dask worker as it starts (a preload): Ctrl-C at a terminal reaches the
whole process group, and the command's own process asks its cells to stop and closes the
cluster; a worker that heard it too would print a traceback. So would a worker whose
heartbeat meets the scheduler already closed (a race of that shutdown): its log record is
dropped."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

LATE_HEARTBEAT = "Failed to communicate with scheduler during heartbeat"


class _LateHeartbeat(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(LATE_HEARTBEAT)


def dask_setup(worker: Any) -> None:  # noqa: ARG001 (Dask's preload hook)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logger = logging.getLogger("distributed.worker")
    if not any(isinstance(f, _LateHeartbeat) for f in logger.filters):
        logger.addFilter(_LateHeartbeat())
