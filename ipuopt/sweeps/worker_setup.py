"""Run in each local Dask worker as it starts (a preload): Ctrl-C at a terminal reaches the
whole process group, and the command's own process asks its cells to stop and closes the
cluster; a worker that heard it too would print a traceback."""

from __future__ import annotations

import signal
import threading
from typing import Any


def dask_setup(worker: Any) -> None:  # noqa: ARG001 (Dask's preload hook)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
