"""p3d_proc.py - process helpers the Python parts of the integration tests
share: stopping a p3d-sim job's ranks the way torchrun stops a job."""
import os
import signal


def stop_children(pid):
    """SIGTERM the child processes (the ranks) of process `pid` (the
    p3d-sim driver), which then reports how each ended."""
    try:
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        return
    for k in kids:
        try:
            os.kill(int(k), signal.SIGTERM)
        except OSError:
            pass
