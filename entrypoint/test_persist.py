"""Tests of persistent sandboxes (PROTOCOL.md, "Persistent sandboxes"): the
runtime, told to persist, serves other hosts on its socket, one driver per
call, outlives its first host's input, and ends itself when idle.

Run with: python3 -m unittest discover -s entrypoint -p 'test_*.py'
"""

import json
import os
import queue
import signal
import socket
import threading
import time
import unittest

from runtime_harness import TIMEOUT, load_runtime_modules, stream_text, wait_until
from test_runtime import RuntimeTestCase

SOCKET = "\0mcp-runtime"


class Relay:
    """A host reaching the runtime over its socket, as a relay's host does."""

    def __init__(self, pid):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect("%s-%d" % (SOCKET, pid))  # a host runtime's own
        self.frames = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        f = self.sock.makefile("rb")
        for line in f:
            self.frames.put(json.loads(line))
        self.frames.put(None)

    def send(self, *frames):
        self.sock.sendall(b"".join(json.dumps(f).encode() + b"\n" for f in frames))

    def recv(self, timeout=TIMEOUT):
        try:
            frame = self.frames.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no frame from the runtime within %.1fs" % timeout)
        if frame is None:
            self.frames.put(None)
            raise AssertionError("the runtime closed the relay's connection")
        return frame

    def run(self, source, id):
        """Runs source as this host; returns (outs, result)."""
        self.send({"t": "exec", "id": id, "code": source, "max_output": 0})
        outs = []
        while True:
            frame = self.recv()
            if frame["t"] == "out":
                outs.append(frame)
            elif frame["t"] == "result":
                return outs, frame
            elif frame["t"] != "started":
                raise AssertionError("unexpected frame: %r" % (frame,))

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.sock.close()


class PersistTest(RuntimeTestCase):
    """A runtime told to persist, driven by its first host and relays."""

    def persist(self, idle_ms=0):
        self.rt.send({"t": "persist", "idle_ms": idle_ms})
        self.assertTrue(wait_until(lambda: self.can_connect()), "the runtime does not listen after persist")

    def can_connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect("%s-%d" % (SOCKET, self.rt.proc.pid))
            return True
        except OSError:
            return False
        finally:
            s.close()

    def relay(self):
        r = Relay(self.rt.proc.pid)
        self.addCleanup(r.close)
        ready = r.recv()
        self.assertEqual((ready["t"], ready["protocol"]), ("ready", 7))
        self.assertIsInstance(ready["last_call"], float)
        return r

    def test_no_socket_without_persist(self):
        self.run_call("x = 1")
        self.assertFalse(self.can_connect())

    def test_relay_takes_over_between_calls(self):
        self.run_call("x = 41")
        self.persist()
        r = self.relay()
        outs, result = r.run("x += 1\nprint(x)", "r1")
        self.assertEqual((result["status"], stream_text(outs)), ("ok", "42\n"))
        # The first host takes the sandbox back with its next exec.
        outs, result = self.run_call("print(x + 1)")
        self.assertEqual(stream_text(outs), "43\n")
        outs, result = r.run("print(x)", "r2")
        self.assertEqual(stream_text(outs), "42\n")

    def test_busy_while_another_hosts_call_runs(self):
        self.persist()
        r = self.relay()
        self.rt.exec_started("import time\ntime.sleep(1)\nprint('first')", "long")
        r.send({"t": "exec", "id": "r1", "code": "print('second')", "max_output": 0})
        self.assertEqual(r.recv(), {"t": "busy", "id": "r1"})
        outs, result = self.rt.collect("long")
        self.assertEqual((result["status"], stream_text(outs)), ("ok", "first\n"))
        outs, result = r.run("print('now')", "r2")
        self.assertEqual(stream_text(outs), "now\n")
        # And the other way round: the first host is answered busy.
        r.send({"t": "exec", "id": "r3", "code": "import time\ntime.sleep(1)", "max_output": 0})
        self.assertEqual(r.recv()["t"], "started")
        self.rt.exec("print(1)", "mine")
        self.assertEqual(self.rt.recv(), {"t": "busy", "id": "mine"})
        self.assertEqual(r.recv()["t"], "result")

    def test_one_host_may_put_it_to_sleep(self):
        """Of several hosts that would put the sandbox to sleep, one is
        granted it: none while a call runs or before the idle time, then
        the first, and no other within a few seconds."""
        self.persist()
        self.run_call("pass")
        r1, r2 = self.relay(), self.relay()
        r1.send({"t": "sleep_claim", "idle_ms": 60000})
        self.assertEqual(r1.recv(), {"t": "sleep_claimed", "ok": False})
        self.rt.exec_started("import time\ntime.sleep(1)", "long")
        r1.send({"t": "sleep_claim", "idle_ms": 0})
        self.assertEqual(r1.recv(), {"t": "sleep_claimed", "ok": False})
        self.rt.collect("long")
        r1.send({"t": "sleep_claim", "idle_ms": 0})
        self.assertEqual(r1.recv(), {"t": "sleep_claimed", "ok": True})
        r2.send({"t": "sleep_claim", "idle_ms": 0})
        self.assertEqual(r2.recv(), {"t": "sleep_claimed", "ok": False})
        r2.send({"t": "sleep_claim", "idle_ms": "0"})
        self.assertEqual(r2.recv(), {"t": "sleep_claimed", "ok": False})

    def test_a_frozen_sandbox_starts_its_idle_time_again(self):
        """A sandbox frozen past its idle timeout (as a checkpoint and a
        restore freeze it) does not end itself as it thaws: the idle
        watcher's late tick starts the idle time again."""
        self.persist(idle_ms=1500)
        self.run_call("pass")
        os.kill(self.rt.proc.pid, signal.SIGSTOP)
        time.sleep(3)
        os.kill(self.rt.proc.pid, signal.SIGCONT)
        time.sleep(0.8)
        self.assertIsNone(self.rt.proc.poll(), "ended at once as it thawed")
        self.assertTrue(wait_until(lambda: self.rt.proc.poll() is not None, timeout=6), "never ended when idle")
        self.assertEqual(self.rt.proc.returncode, 75)

    def test_a_hosts_frames_of_another_call_are_dropped(self):
        self.persist()
        r = self.relay()
        r.run("pass", "r1")  # r drives now
        self.rt.send({"t": "interrupt", "id": "r1"}, {"t": "rpc_result", "id": 99, "ok": True, "result": 1})
        outs, result = r.run("print('still')", "r2")
        self.assertEqual(stream_text(outs), "still\n")

    def test_a_gone_drivers_call_is_interrupted_and_state_kept(self):
        self.run_call("x = 'kept'")
        self.persist()
        r = self.relay()
        r.send({"t": "exec", "id": "r1", "code": "import time\nwhile True:\n    time.sleep(0.05)", "max_output": 0})
        self.assertEqual(r.recv()["t"], "started")
        r.close()
        self.assertTrue(self.rt.wait_stderr("is gone"))
        # The interrupted call ends (its result goes nowhere); then the
        # first host takes the sandbox back, its state intact.
        deadline = time.monotonic() + TIMEOUT
        while True:
            self.rt.exec("print(x)", "back")
            frame = self.rt.recv()
            if frame["t"] != "busy":
                break
            self.assertLess(time.monotonic(), deadline, "the gone host's call never ended")
            time.sleep(0.05)
        outs, result = self.rt.collect("back")
        self.assertEqual(stream_text(outs), "kept\n")

    def test_outlives_its_first_hosts_input(self):
        self.run_call("x = 'alive'")
        self.persist()
        self.rt.proc.stdin.close()
        self.assertTrue(self.rt.wait_stderr("host main is gone"))
        r = self.relay()
        outs, result = r.run("print(x)", "r1")
        self.assertEqual(stream_text(outs), "alive\n")
        self.assertIsNone(self.rt.proc.poll())

    def test_ends_itself_when_idle(self):
        self.persist(idle_ms=1500)
        r = self.relay()
        r.run("pass", "r1")  # a call resets the idle time
        time.sleep(1)
        self.assertIsNone(self.rt.proc.poll(), "ended before its idle timeout")
        self.assertEqual(self.rt.proc.wait(timeout=10), 75)


if __name__ == "__main__":
    unittest.main()


class RacingLock:
    """A lock that, the first time it is taken, first lets another host's
    frame through: the interleaving of two reader threads where a host
    checks whether it drives, then another takes the sandbox over."""

    def __init__(self, before):
        self.lock = threading.Lock()
        self.before = before

    def __enter__(self):
        before, self.before = self.before, None
        if before is not None:
            before()
        self.lock.acquire()

    def __exit__(self, *exc):
        self.lock.release()


class AdmissionRaceTest(unittest.TestCase):
    """Admission decided in one process, the interleaving forced: the
    driver's exec races another host's take-over."""

    def setUp(self):
        modules = load_runtime_modules()
        self.admission = modules["admission"]
        self.channel = modules["channel"]
        self.dispatch = modules["dispatch"]
        self.relay = modules["relay"]

    def pipe(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        return r, w

    def frames(self, fd):
        os.set_blocking(fd, False)
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return []
        return [json.loads(line) for line in data.splitlines()]

    def test_the_drivers_exec_racing_a_take_over_is_answered_busy_on_its_own_connection(self):
        main_r, main_w = self.pipe()
        relay_r, relay_w = self.pipe()
        chan = self.channel.Channel(main_w)
        main = self.relay.Host(-1, main_w, "main")
        relay = self.relay.Host(-1, relay_w, "relay")
        no_egress = type("NoEgress", (), {"reset": lambda self: None})()
        rt = self.admission.Admission(chan, no_egress, main, None)
        frames = self.dispatch.Dispatch(rt, None, chan, None, None, no_egress)
        exec_of = lambda id: {"t": "exec", "id": id, "code": "pass", "max_output": 0}
        # The main host's exec is read while it drives; before it is
        # admitted, the relay's exec takes the sandbox over.
        rt.lock = RacingLock(lambda: frames.handle(exec_of("relay-1"), relay))
        frames.handle(exec_of("main-1"), main)

        self.assertIs(rt.driver, relay)
        self.assertEqual(rt.call.id, "relay-1")
        self.assertEqual(self.frames(main_r), [{"t": "busy", "id": "main-1"}])
        self.assertEqual(self.frames(relay_r), [], "the relay got an answer to the main host's exec")
        self.assertEqual(rt.inbox.get_nowait()[0].id, "relay-1")
        self.assertTrue(rt.inbox.empty())
