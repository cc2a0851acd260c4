"""Killing the processes a call leaves behind.

Installed in the sandbox as the module `mcp_sandbox_reaper`. In the
sandbox (its own PID namespace, not root) every process but init and the
runtime is killed with kill(-1); elsewhere (tests on a host) only the
runtime's own descendants. Standard library only.
"""

import os
import signal
import time


class Reaper:
    """Kills and reaps leftover processes; sandbox selects kill(-1)."""

    def __init__(self, sandbox):
        self.sandbox = sandbox
        # relays counts the relays through which other hosts reach a
        # persistent sandbox: processes entered from outside the sandbox
        # (exec; their parent is 0, outside its PID namespace, which no
        # process of the sandbox can become), never the call's leftovers.
        # While any runs, leftovers are killed one by one, sparing them.
        self.relays = 0

    def kill_leftovers(self):
        """Kills every process the call left behind; returns how many."""
        if self.sandbox and self.alone():
            return 0
        me = os.getpid()
        seen = set()
        for attempt in range(200):
            others = self.other_processes(me)
            if not others:
                break
            seen.update(others)
            self.kill_once(others)
            if attempt:
                time.sleep(0.001 * min(attempt, 20))
        self.reap()
        return len(seen)

    @staticmethod
    def alone():
        """Reports, in one system call, that the sandbox has no process but
        init and this one: kill(-1, 0) signals nothing and fails with ESRCH
        when there is no other process it may signal (zombies count)."""
        try:
            os.kill(-1, 0)
        except ProcessLookupError:
            return True
        except OSError:
            pass
        return False

    def kill_once(self, others=None):
        """Sends SIGKILL to the leftover processes once and reaps them.
        As PID 1 (a pod) it never uses kill(-1): the engine's helpers
        (files in and out, run with exec) may be running, and are spared."""
        if self.sandbox and not self.relays and os.getpid() != 1:
            # Every process of the container but init and this one. Forks
            # racing with it cannot complete with a fatal signal pending.
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        else:
            for pid in others if others is not None else self.other_processes(os.getpid()):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.reap()

    def other_processes(self, me):
        """Live processes to kill: all but init and me in the sandbox, else my descendants."""
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
        if self.sandbox and all(int(p) in (1, me) for p in pids):
            return set()  # the common case, without reading any stat file
        procs = {}
        for name in pids:
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) < 2 or fields[0] in (b"Z", b"X"):
                continue
            procs[int(name)] = int(fields[1])
        if self.sandbox:
            # A parent of 0: entered from outside (a relay), not a leftover.
            return {p for p, pp in procs.items() if p not in (1, me) and pp != 0}
        mine = set()
        frontier = {me}
        while frontier:
            frontier = {p for p, pp in procs.items() if pp in frontier and p not in mine}
            mine |= frontier
        mine.discard(me)
        return mine

    @staticmethod
    def reap():
        """Collects the exit status of every child that has ended."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
