"""Unit tests of the sandbox runtime, entrypoint/runtime/*.py (standard library only).

Run them from this directory:

    cd entrypoint && python3 -m unittest -v test_runtime

Each test starts the runtime as a subprocess of this interpreter in host mode
(runtime_harness.Runtime): frames go to its stdin and come back from its
stdout as in PROTOCOL.md. BootstrapTest runs the bootstrap of entrypoint.go
the way a container does and feeds it the runtime source.

The tests commented "Regression" guard bugs these tests found and the runtime fixed.
"""

import importlib.util
import json
import os
import sys
import time
import unittest

from runtime_harness import (
    RUNTIME_DIR,
    RUNTIME_PATH,
    TIMEOUT,
    Runtime,
    bootstrap_source,
    code,
    module_path,
    process_gone,
    runtime_modules,
    runtime_program,
    stream_text,
    wait_until,
)

OK_KEYS = {"t", "id", "status", "duration_ms", "dropped", "killed"}
ERROR_KEYS = OK_KEYS | {"exc_type", "exc_message", "traceback"}
EXIT_KEYS = OK_KEYS | {"exit_code"}
NO_DROPS = {"stdout": 0, "stderr": 0}


def runtime_frames(tb):
    """The runtime's own files that traceback text tb names: those of its
    modules but mcp_sandbox_outputs (whose frames tell what display()
    rejected), by path or by the name the host compiles them with."""
    names = [RUNTIME_PATH, "<mcp-runtime>"]
    for name in runtime_modules():
        if name != "outputs":
            names += [module_path(name), "<mcp-%s>" % name]
    return [n for n in names if n in tb]


class RuntimeTestCase(unittest.TestCase):
    """A runtime started for each test, with helpers to run calls in it."""

    def setUp(self):
        self.rt = Runtime()
        self.addCleanup(self.rt.close)
        self.ready = self.rt.recv()
        self.assertEqual(self.ready["t"], "ready")
        self.ids = 0

    def next_id(self):
        self.ids += 1
        return "call-%d" % self.ids

    def run_call(self, source, status="ok", max_output=0):
        """Runs source; checks the result's status and members; returns (outs, result)."""
        id = self.next_id()
        outs, result = self.rt.run(source, id, max_output)
        self.assertEqual(result["status"], status, result)
        keys = {"ok": OK_KEYS, "exit": EXIT_KEYS}.get(status, ERROR_KEYS)
        self.assertEqual(set(result), keys)
        self.assertIsInstance(result["duration_ms"], (int, float))
        self.assertIsInstance(result["killed"], int)
        return outs, result

    def progress_frames(self, source, progress):
        """Runs source with the exec's progress member; returns its progress frames."""
        id = self.next_id()
        self.rt.send({"t": "exec", "id": id, "code": source, "max_output": 0, "progress": progress})
        frames = []
        while True:
            frame = self.rt.recv()
            if frame.get("t") == "result":
                self.assertEqual((frame["id"], frame["status"]), (id, "ok"), frame)
                return frames
            if frame.get("t") == "progress":
                self.assertEqual(frame["id"], id)
                self.assertLessEqual(set(frame), {"t", "id", "progress", "total", "message"})
                frames.append(frame)

    def stdout_of(self, source, max_output=0):
        outs, result = self.run_call(source, max_output=max_output)
        self.assertEqual(stream_text(outs, "stderr"), "")
        self.assertEqual(result["dropped"], NO_DROPS)
        return stream_text(outs)

    def start_rpc_call(self, source):
        """Starts a call that makes one RPC; returns (call id, the rpc frame)."""
        id = self.next_id()
        self.rt.exec_started(source, id)
        rpc = self.rt.recv()
        self.assertEqual(rpc["t"], "rpc", rpc)
        return id, rpc

    def interrupt_after(self, source, marker):
        """Starts source, waits until it printed marker, interrupts it; returns the result."""
        id = self.next_id()
        self.rt.exec_started(source, id)
        first = self.rt.recv()
        self.assertEqual((first["t"], first["id"], first["data"]), ("out", id, marker))
        time.sleep(0.3)  # lets the code get past its print into the part to interrupt
        start = time.monotonic()
        self.rt.send({"t": "interrupt", "id": id})
        outs, result = self.rt.collect(id, timeout=3)
        self.assertLess(time.monotonic() - start, 1.5)
        self.assertEqual(outs, [])
        self.assertEqual(set(result), ERROR_KEYS)
        self.assertEqual((result["status"], result["exc_type"]), ("interrupted", "KeyboardInterrupt"))
        self.assertIn("<run_python#", result["traceback"])
        self.assertTrue(result["traceback"].endswith("KeyboardInterrupt\n"))
        return result


class RuntimeTest(RuntimeTestCase):
    """Calls, their output, interrupts and the host's frames."""

    def test_ready_frame(self):
        self.assertEqual(set(self.ready), {"t", "protocol", "runtime", "python", "pid", "boot", "sent", "last_call"})
        self.assertIs(type(self.ready["sent"]), float)
        self.assertLess(abs(self.ready["sent"] - time.time()), 60)
        self.assertLessEqual(self.ready["boot"], self.ready["sent"])
        self.assertEqual(self.ready["protocol"], 7)
        self.assertEqual(self.ready["python"], "%d.%d.%d" % sys.version_info[:3])
        self.assertIsInstance(self.ready["runtime"], str)
        self.assertIs(type(self.ready["pid"]), int)
        self.assertEqual(self.ready["pid"], self.rt.proc.pid)

    def test_sync_after_a_cut_frame(self):
        """A host that lost its streams ends a cut frame with blank lines
        (ignored quietly) and asks for a sync: the answer carries its nonce,
        compact, and calls go on."""
        self.run_call("x = 'kept'")
        self.rt.write(b'{"t":"exec","id":"cut","co' + b"\n" * 1000)
        self.rt.write(b'{"t":"sync","n":"NONCE234"}\n')
        self.assertEqual(self.rt.recv(), {"t": "synced", "n": "NONCE234"})
        outs, _ = self.run_call("print(x)")
        self.assertEqual(stream_text(outs), "kept\n")
        self.assertTrue(self.rt.wait_stderr("ignoring a malformed frame"))
        self.assertEqual(bytes(self.rt.stderr).count(b"ignoring"), 1, bytes(self.rt.stderr))

    def test_globals_persist(self):
        self.run_call(code("""
            import math
            x = 41
            def inc(v):
                return v + 1
            class Box:
                def __init__(self, v):
                    self.v = v
        """))
        self.assertEqual(self.stdout_of("b = Box(inc(x))\nprint(b.v, math.sqrt(16), __name__)"), "42 4.0 __main__\n")
        out = self.stdout_of("import pickle\nprint(pickle.loads(pickle.dumps(b)).v, type(b).__module__)")
        self.assertEqual(out, "42 __main__\n")

    def test_top_level_await_and_persistent_loop(self):
        self.run_call(code("""
            import asyncio
            q = asyncio.Queue()
            await q.put("queued")
            loop1 = asyncio.get_running_loop()
            fut = loop1.create_future()
            async def waiter():
                return "task got " + await fut
            task = asyncio.create_task(waiter())
        """))
        out = self.stdout_of(code("""
            print(asyncio.get_running_loop() is loop1)
            print(await q.get())
            fut.set_result("resolved")
            print(await task)
        """))
        self.assertEqual(out, "True\nqueued\ntask got resolved\n")

    def test_exception(self):
        self.run_call("def f(x):\n    return 1 / x\n")
        _, result = self.run_call("y = 5\nf(0)\n", status="error")
        self.assertEqual(result["exc_type"], "ZeroDivisionError")
        self.assertEqual(result["exc_message"], "division by zero")
        tb = result["traceback"]
        self.assertTrue(tb.startswith("Traceback (most recent call last):\n"), tb)
        self.assertIn('File "<run_python#2>", line 2, in <module>\n    f(0)\n', tb)
        self.assertIn('File "<run_python#1>", line 2, in f\n    return 1 / x\n', tb)
        self.assertTrue(tb.endswith("ZeroDivisionError: division by zero\n"), tb)
        self.assertNotIn("runtime.py", tb)
        self.assertEqual(runtime_frames(tb), [], tb)
        self.assertEqual(result["dropped"], NO_DROPS)
        self.assertEqual(self.stdout_of("print(y, f(0.5))"), "5 2.0\n")

    def test_started_frame(self):
        self.run_call("x = 1")
        self.assertTrue(self.rt.started, "no started frame before a call's code ran")
        self.run_call("raise ValueError('in user code')", status="error")
        self.assertTrue(self.rt.started, "no started frame before code that raises")
        self.run_call("x = (\n", status="error")
        self.assertFalse(self.rt.started, "a started frame for code that does not compile")

    def test_syntax_error(self):
        _, result = self.run_call("x = (\n", status="error")
        self.assertEqual(result["exc_type"], "SyntaxError")
        self.assertIn("never closed", result["exc_message"])
        self.assertIn('File "<run_python#1>", line 1', result["traceback"])
        self.assertNotIn("runtime.py", result["traceback"])
        self.assertEqual(runtime_frames(result["traceback"]), [], result["traceback"])
        self.assertEqual(self.stdout_of("print('still here')"), "still here\n")

    def test_system_exit(self):
        cases = [
            ("import sys\nsys.exit(3)", 3),
            ("sys.exit()", 0),
            ("import asyncio\nawait asyncio.sleep(0)\nraise SystemExit(5)", 5),
            ("sys.exit('bye')", 1),
        ]
        for source, exit_code in cases:
            _, result = self.run_call(source, status="exit")
            self.assertEqual(result["exit_code"], exit_code)
        self.assertEqual(self.stdout_of("print(sys.version_info[0])"), "3\n")

    # Regression: sys.exit(True) once sent "exit_code": true, which the host
    # cannot decode as an int: a protocol violation that killed the sandbox.
    def test_system_exit_with_bool(self):
        for arg, want in (("True", 1), ("False", 0)):
            _, result = self.run_call("import sys\nsys.exit(%s)" % arg, status="exit")
            self.assertIs(type(result["exit_code"]), int)
            self.assertEqual(result["exit_code"], want)

    def test_interrupt_busy_loop(self):
        self.run_call("x = 1")
        self.interrupt_after("y = 2\nprint('spinning', flush=True)\nwhile True:\n    pass\n", "spinning\n")
        self.assertEqual(self.stdout_of("print(x + y)"), "3\n")

    def test_interrupt_sleep(self):
        self.run_call("x = 1")
        result = self.interrupt_after("import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n", "sleeping\n")
        self.assertIn("time.sleep(60)", result["traceback"])
        self.assertEqual(self.stdout_of("print(x, time.time() > 0)"), "1 True\n")

    def test_stray_interrupts_are_harmless(self):
        self.rt.send({"t": "interrupt", "id": "nothing-runs"})
        self.assertEqual(self.stdout_of("print('idle ok')"), "idle ok\n")
        self.rt.send({"t": "interrupt", "id": "call-1"})  # a call that has ended
        id, rpc = self.start_rpc_call("import mcp_sandbox_runtime as rt\nprint(await rt.rpc({}))")
        self.rt.send({"t": "interrupt", "id": "another-call"})
        time.sleep(0.2)
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": True, "result": "answered"})
        outs, result = self.rt.collect(id)
        self.assertEqual(result["status"], "ok", result)
        self.assertEqual(stream_text(outs), "answered\n")

    # Regression: an interrupt read in the same chunk as its exec was dropped
    # while the call was not yet current; the call ran on until the host
    # killed the sandbox.
    def test_interrupt_right_after_exec(self):
        self.rt.send(
            {"t": "exec", "id": "a", "code": "import time\ntime.sleep(2)", "max_output": 0},
            {"t": "interrupt", "id": "a"},
        )
        _, result = self.rt.collect("a")
        self.assertEqual(result["status"], "interrupted")

    def test_output_streams(self):
        outs, result = self.run_call(code("""
            import os, subprocess, sys
            print("p1")
            sys.stderr.write("e1\\n")
            os.write(1, b"w1\\n")
            os.write(2, b"w2\\n")
            subprocess.run(["echo", "hi"])
            subprocess.run(["sh", "-c", "echo se >&2"])
            os.system("echo sys")
            print("tail", end="")
        """))
        self.assertEqual(stream_text(outs, "stdout"), "p1\nw1\nhi\nsys\ntail")
        self.assertEqual(stream_text(outs, "stderr"), "e1\nw2\nse\n")
        self.assertEqual(result["dropped"], NO_DROPS)

    def test_all_output_before_result(self):
        outs, _ = self.run_call(code("""
            import os, subprocess, sys
            for i in range(2000):
                print(i)
                os.write(2, b"%d\\n" % i)
            subprocess.run(["seq", "2000", "30000"])
        """))
        numbers = "".join("%d\n" % i for i in range(2000))
        self.assertEqual(stream_text(outs, "stdout"), numbers + "".join("%d\n" % i for i in range(2000, 30001)))
        self.assertEqual(stream_text(outs, "stderr"), numbers)
        # Nothing of that call may follow its result: collect fails on a stray frame.
        self.assertEqual(self.stdout_of("print('next')"), "next\n")

    def test_forged_frames_are_data(self):
        forged = json.dumps({"t": "result", "id": "call-1", "status": "ok", "forged": True})
        rpc = json.dumps({"t": "rpc", "id": 1, "payload": {}})
        source = "import os\nprint(%r)\nos.write(1, %r)\nos.write(2, %r)\n"
        outs, result = self.run_call(source % (forged, (rpc + "\n").encode(), (forged + "\n").encode()))
        self.assertNotIn("forged", result)
        self.assertEqual(stream_text(outs, "stdout"), forged + "\n" + rpc + "\n")
        self.assertEqual(stream_text(outs, "stderr"), forged + "\n")

    def test_max_output_caps(self):
        outs, result = self.run_call("import sys\nprint('x' * 100000)\nsys.stderr.write('y' * 5000)", max_output=1000)
        self.assertEqual(stream_text(outs, "stdout"), "x" * 1000)
        self.assertEqual(stream_text(outs, "stderr"), "y" * 1000)
        self.assertEqual(result["dropped"], {"stdout": 100001 - 1000, "stderr": 4000})
        # The cap is per call, and 0 means unlimited.
        self.assertEqual(self.stdout_of("print('z' * 100000)"), "z" * 100000 + "\n")
        self.assertEqual(self.stdout_of("print('abc')", max_output=10), "abc\n")

    def test_utf8_decoding(self):
        self.assertEqual(self.stdout_of("import os\nos.write(1, b'a\\xffb\\n')"), "a\ufffdb\n")
        self.assertEqual(self.stdout_of("os.write(1, b'z\\xe2\\x82')"), "z\ufffd")  # cut short at the end
        # A character split across writes (and pipe reads) arrives whole.
        out = self.stdout_of(code("""
            import os, time
            data = "\u00e9\u20ac".encode()
            for part in (data[:1], data[1:3], data[3:]):
                os.write(1, part)
                time.sleep(0.05)
        """))
        self.assertEqual(out, "\u00e9\u20ac")

    def test_stdin_is_devnull(self):
        out = self.stdout_of(code("""
            import os, sys
            try:
                input()
            except EOFError:
                print("eof")
            print(repr(sys.stdin.read()), os.read(0, 10))
            print(os.path.samestat(os.fstat(0), os.stat(os.devnull)))
        """))
        self.assertEqual(out, "eof\n'' b''\nTrue\n")
        self.assertEqual(self.stdout_of("print('frames intact')"), "frames intact\n")

    def test_broken_stdio_restored(self):
        breakers = [
            "sys.stdout.close()",
            "sys.stderr.close()",
            "os.close(1)",
            "os.close(2)",
            "os.close(0)",
            "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)",
            "os.dup2(os.open(os.devnull, os.O_WRONLY), 2)",
            "sys.stdout = io.StringIO()\nsys.stderr = io.StringIO()",
        ]
        check = "print('out')\nsys.stderr.write('err\\n')\nos.write(1, b'fd1\\n')\nos.write(2, b'fd2\\n')"
        for breaker in breakers:
            with self.subTest(breaker=breaker):
                self.run_call("import io, os, sys\n" + breaker)
                outs, _ = self.run_call(check)
                self.assertEqual(stream_text(outs, "stdout"), "out\nfd1\n")
                self.assertEqual(stream_text(outs, "stderr"), "err\nfd2\n")

    # Regression: with sys.stdout = None the end-of-call flush raised
    # AttributeError out of serve() and the runtime exited without a result.
    def test_stdout_set_to_none_restored(self):
        self.run_call("import sys\nsys.stdout = None")
        self.assertEqual(self.stdout_of("print('back')"), "back\n")

    def test_leftover_processes_killed(self):
        outs, result = self.run_call(code("""
            import subprocess
            p = subprocess.Popen(["sleep", "100"])
            g = subprocess.Popen(["sh", "-c", "sleep 100 & echo $!; wait"], stdout=subprocess.PIPE)
            print(p.pid, g.pid, int(g.stdout.readline()))
        """))
        pids = [int(p) for p in stream_text(outs).split()]
        self.assertEqual(len(pids), 3)
        self.assertGreaterEqual(result["killed"], 3)
        for pid in pids:
            self.assertTrue(wait_until(lambda: process_gone(pid)), "process %d still runs" % pid)
        _, result = self.run_call("import subprocess\nsubprocess.run(['true'])")
        self.assertEqual(result["killed"], 0)

    def test_exec_while_busy(self):
        id, rpc = self.start_rpc_call("import mcp_sandbox_runtime as rt\nprint(await rt.rpc({'hold': 1}))")
        self.rt.exec("print('never runs')", "second")
        busy = self.rt.recv()
        self.assertEqual(set(busy), ERROR_KEYS)
        self.assertEqual((busy["t"], busy["id"], busy["status"]), ("result", "second", "error"))
        self.assertEqual((busy["exc_type"], busy["dropped"], busy["killed"]), ("ProtocolError", NO_DROPS, 0))
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": True, "result": "released"})
        outs, result = self.rt.collect(id)
        self.assertEqual((result["status"], stream_text(outs)), ("ok", "released\n"))
        self.assertEqual(self.stdout_of("print('after')"), "after\n")

    # Regression: a second exec read before the first one became current was
    # queued instead of refused with a ProtocolError result.
    def test_exec_right_after_exec(self):
        self.rt.send(
            {"t": "exec", "id": "a", "code": "import time\ntime.sleep(0.3)", "max_output": 0},
            {"t": "exec", "id": "b", "code": "print('b ran')", "max_output": 0},
        )
        # b is refused on arrival; a's started frame may come before or after.
        frames = [self.rt.recv(), self.rt.recv()]
        refusal = [f for f in frames if f["id"] == "b"]
        self.assertEqual([(f["t"], f.get("exc_type")) for f in refusal], [("result", "ProtocolError")], frames)
        self.assertIn({"t": "started", "id": "a"}, frames)
        outs, result = self.rt.collect("a")
        self.assertEqual((outs, result["status"]), ([], "ok"))

    def test_malformed_host_frames_ignored(self):
        self.rt.write(
            b"not json\n[1, 2]\n\"text\"\n{}\n\n\xff\xfe\n"
            b'{"t": "bogus"}\n{"t": "rpc_result"}\n{"t": "interrupt"}\n'
        )
        self.assertEqual(self.stdout_of("print('alive')"), "alive\n")
        self.assertTrue(self.rt.wait_stderr("ignoring a malformed frame"), bytes(self.rt.stderr))
        self.assertTrue(self.rt.wait_stderr("not an object"), bytes(self.rt.stderr))
        self.assertTrue(self.rt.wait_stderr("unknown type 'bogus'"), bytes(self.rt.stderr))

    # Regression: a mistyped max_output once killed the runtime silently;
    # it is now answered with a ProtocolError result and serving goes on.
    def test_mistyped_exec_member(self):
        self.rt.send({"t": "exec", "id": "m", "code": "1", "max_output": "lots"})
        time.sleep(0.3)  # lets a runtime that answers it finish first
        self.rt.exec("print('alive')", "n")
        while True:
            frame = self.rt.recv()
            if frame.get("id") != "m":
                break
        self.assertEqual(frame, {"t": "started", "id": "n"})
        frame = self.rt.recv()
        self.assertEqual((frame["t"], frame["id"], frame.get("data")), ("out", "n", "alive\n"))

    def test_stdin_eof_exits_0(self):
        self.run_call("x = 1")
        self.rt.proc.stdin.close()
        self.assertEqual(self.rt.proc.wait(timeout=TIMEOUT), 0)


class RuntimeRPCTest(RuntimeTestCase):
    """Requests from user code to the host: RPCs and progress reports."""

    def test_progress_frames(self):
        code = (
            "import mcp_sandbox_runtime as rt, time\n"
            "rt.report_progress(1, 4, 'x' * 5000)\n"
            "time.sleep(0.02)\n"
            "rt.report_progress(2, float('inf'))\n"
            "rt.report_progress(3, 4, 'last')\n"
        )
        frames = self.progress_frames(code, True)
        # The first goes at once (its message cut); the next two come
        # within 50 ms of it and are folded into the newer, sent when the
        # interval has passed (or with the end of the call).
        self.assertEqual(frames, [
            {"t": "progress", "id": frames[0]["id"], "progress": 1.0, "total": 4.0, "message": "x" * 1024},
            {"t": "progress", "id": frames[0]["id"], "progress": 3.0, "total": 4.0, "message": "last"},
        ])
        self.assertEqual(self.progress_frames(code, False), [])
        # A report held back is sent when its interval has passed, without
        # waiting for another report or for the end of the call.
        held = (
            "import mcp_sandbox_runtime as rt, time, sys\n"
            "rt.report_progress(1, 2, 'one')\n"
            "rt.report_progress(2, 2, 'two')\n"
            "time.sleep(0.5)\n"
        )
        id = self.next_id()
        self.rt.send({"t": "exec", "id": id, "code": held, "max_output": 0, "progress": True})
        got = []
        while "two" not in got:
            frame = self.rt.recv(timeout=0.4)  # before the sleep ends
            if frame.get("t") == "progress":
                got.append(frame["message"])
        self.assertIn(got, (["one", "two"], ["two"]))
        self.rt.collect(id)

    def test_rpc_roundtrip(self):
        payload = {"op": "add", "args": [1, 2], "nested": {"k": None}}
        id, rpc = self.start_rpc_call("import mcp_sandbox_runtime as rt\nprint(repr(await rt.rpc(%r)))" % payload)
        self.assertEqual(set(rpc), {"t", "id", "payload"})
        self.assertIs(type(rpc["id"]), int)
        self.assertEqual(rpc["payload"], payload)
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": True, "result": {"sum": 3, "l": [1, "a"]}})
        outs, result = self.rt.collect(id)
        self.assertEqual(result["status"], "ok", result)
        self.assertEqual(stream_text(outs), "{'sum': 3, 'l': [1, 'a']}\n")
        # Ids are unique for the runtime's life, not per call.
        id2, rpc2 = self.start_rpc_call("print(await rt.rpc({'again': 1}))")
        self.assertGreater(rpc2["id"], rpc["id"])
        self.rt.send({"t": "rpc_result", "id": rpc2["id"], "ok": True, "result": None})
        self.assertEqual(stream_text(self.rt.collect(id2)[0]), "None\n")

    def test_rpc_error(self):
        catch = "try:\n    await rt.rpc({})\nexcept rt.RPCError as e:\n    print('caught:', e)"
        id, rpc = self.start_rpc_call("import mcp_sandbox_runtime as rt\n" + catch)
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": False, "error": "no such tool"})
        outs, _ = self.rt.collect(id)
        self.assertEqual(stream_text(outs), "caught: no such tool\n")
        id, rpc = self.start_rpc_call("await rt.rpc({'op': 'fail'})")
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": False, "error": "denied"})
        _, result = self.rt.collect(id)
        self.assertEqual((result["status"], result["exc_type"], result["exc_message"]), ("error", "RPCError", "denied"))
        self.assertIn("<run_python#2>", result["traceback"])
        self.assertNotIn("runtime.py", result["traceback"])
        self.assertEqual(runtime_frames(result["traceback"]), [], result["traceback"])

    def test_rpc_concurrent_answers_in_reverse(self):
        id = self.next_id()
        self.rt.exec(code("""
            import asyncio, json, mcp_sandbox_runtime as rt
            rs = await asyncio.gather(*(rt.rpc({"i": i}) for i in range(50)))
            print(json.dumps(rs))
        """), id)
        self.assertEqual(self.rt.recv(), {"t": "started", "id": id})
        rpcs = [self.rt.recv() for _ in range(50)]
        self.assertEqual([f["t"] for f in rpcs], ["rpc"] * 50)
        self.assertEqual(sorted(f["payload"]["i"] for f in rpcs), list(range(50)))
        self.assertEqual(len({f["id"] for f in rpcs}), 50)
        answers = [{"t": "rpc_result", "id": f["id"], "ok": True, "result": f["payload"]["i"] * 10} for f in rpcs]
        self.rt.send(*answers[::-1])
        outs, result = self.rt.collect(id)
        self.assertEqual(result["status"], "ok", result)
        self.assertEqual(json.loads(stream_text(outs)), [i * 10 for i in range(50)])

    def test_rpc_sync(self):
        id, rpc = self.start_rpc_call("import mcp_sandbox_runtime as rt\nprint(rt.rpc_sync({'sync': True}))")
        self.assertEqual(rpc["payload"], {"sync": True})
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": True, "result": [1, 2]})
        self.assertEqual(stream_text(self.rt.collect(id)[0]), "[1, 2]\n")
        id, rpc = self.start_rpc_call("try:\n    rt.rpc_sync({})\nexcept rt.RPCError as e:\n    print('caught:', e)")
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": False, "error": "sync failure"})
        self.assertEqual(stream_text(self.rt.collect(id)[0]), "caught: sync failure\n")

    def test_rpc_result_with_unknown_id_ignored(self):
        id, rpc = self.start_rpc_call("import mcp_sandbox_runtime as rt\nprint(await rt.rpc({}))")
        rid = rpc["id"]
        self.rt.send(
            {"t": "rpc_result", "id": rid + 1000, "ok": True, "result": "wrong: unknown id"},
            {"t": "rpc_result", "id": str(rid), "ok": True, "result": "wrong: string id"},
            {"t": "rpc_result", "ok": True, "result": "wrong: no id"},
            {"t": "rpc_result", "id": rid, "ok": True, "result": "right"},
            {"t": "rpc_result", "id": rid, "ok": True, "result": "wrong: second answer"},
        )
        outs, result = self.rt.collect(id)
        self.assertEqual(stream_text(outs), "right\n")
        self.assertEqual(self.stdout_of("print('serving')"), "serving\n")

    def test_rpc_outstanding_at_call_end_fails(self):
        id, rpc = self.start_rpc_call(code("""
            import asyncio, mcp_sandbox_runtime as rt
            pending = asyncio.ensure_future(rt.rpc({"late": 1}))
            await asyncio.sleep(0)
        """))
        _, result = self.rt.collect(id)
        self.assertEqual(result["status"], "ok", result)
        self.rt.send({"t": "rpc_result", "id": rpc["id"], "ok": True, "result": "too late"})
        out = self.stdout_of("try:\n    await pending\nexcept rt.RPCError as e:\n    print('failed:', e)")
        self.assertEqual(out, "failed: the call ended before the host answered\n")


class RuntimeEdgeTest(unittest.TestCase):
    """Inputs from user code that once could break the session."""

    def setUp(self):
        self.rt = Runtime()
        self.addCleanup(self.rt.close)
        self.assertEqual(self.rt.recv()["t"], "ready")

    def exec_collect(self, code, id="e"):
        return self.rt.run(code, id)

    def test_rpc_payload_must_be_a_dict(self):
        outs, res = self.exec_collect(
            "import mcp_sandbox_runtime as rt\ntry:\n    rt.rpc_sync([1])\nexcept TypeError as e:\n    print(e)"
        )
        self.assertEqual(res["status"], "ok")
        self.assertEqual("".join(f["data"] for f in outs), "an RPC payload must be a dict, not list\n")

    def test_oversized_and_unencodable_rpc_refused_in_the_sandbox(self):
        code = (
            "import asyncio, mcp_sandbox_runtime as rt\n"
            "for payload in ({'x': 'y' * (17 << 20)}, {'x': object()}):\n"
            "    for call in (lambda: rt.rpc_sync(payload), lambda: asyncio.run(rt.rpc(payload))):\n"
            "        try:\n"
            "            call()\n"
            "        except (rt.RPCError, TypeError) as e:\n"
            "            print(type(e).__name__, str(e)[:40])\n"
        )
        outs, res = self.exec_collect(code)
        self.assertEqual(res["status"], "ok", res)
        lines = "".join(f["data"] for f in outs).splitlines()
        self.assertEqual(lines[:2], ["RPCError the RPC request is 17825830 bytes, over "] * 2, lines)
        self.assertTrue(all(l.startswith("TypeError") for l in lines[2:]) and len(lines) == 4, lines)
        # No frame was sent and nothing is left pending: the next RPC works.
        outs, res = self.exec_collect("import mcp_sandbox_runtime as rt\nprint(len(rt.__dict__) > 0)")
        self.assertEqual(res["status"], "ok")

    def test_exit_codes_fit_the_host(self):
        _, res = self.exec_collect("import sys; sys.exit(2**70)")
        self.assertEqual((res["status"], res["exit_code"]), ("exit", 1))

    def test_exit_message_printed(self):
        outs, res = self.exec_collect("import sys; sys.exit('bye now')")
        self.assertEqual((res["status"], res["exit_code"]), ("exit", 1))
        self.assertEqual("".join(f["data"] for f in outs if f["stream"] == "stderr"), "bye now\n")


class BootstrapTest(unittest.TestCase):
    """The container's start: `python3 -u -c BOOTSTRAP` reading the runtime from stdin."""

    def start(self, payload):
        rt = Runtime([sys.executable, "-u", "-c", bootstrap_source()], payload)
        self.addCleanup(rt.close)
        return rt

    def test_bootstrap_runs_runtime(self):
        source = runtime_program()
        rt = self.start(b"MCPRT %d\n" % len(source) + source)
        ready = rt.recv()
        self.assertEqual((ready["t"], ready["protocol"], ready["pid"]), ("ready", 7, rt.proc.pid))
        outs, result = rt.run("x = 6 * 7\nprint(x)", "1")
        self.assertEqual((result["status"], stream_text(outs)), ("ok", "42\n"))
        _, result = rt.run("def f():\n    raise KeyError(x)\nf()", "2")
        self.assertEqual((result["status"], result["exc_type"]), ("error", "KeyError"))
        self.assertIn('File "<run_python#2>", line 2, in f', result["traceback"])
        self.assertNotIn("<mcp-runtime>", result["traceback"])
        rt.proc.stdin.close()
        self.assertEqual(rt.proc.wait(timeout=TIMEOUT), 0)

    def test_bootstrap_rejects_bad_input(self):
        for payload, message in ((b"NOPE 3\nabc", "bad header"), (b"MCPRT 100\nshort", "stdin closed")):
            with self.subTest(payload=payload):
                rt = self.start(payload)
                rt.proc.stdin.close()
                self.assertEqual(rt.proc.wait(timeout=TIMEOUT), 1)
                self.assertTrue(rt.wait_stderr(message), bytes(rt.stderr))
                self.assertIsNone(rt.frames.get(timeout=TIMEOUT))


if __name__ == "__main__":
    unittest.main()


class PidOneTest(unittest.TestCase):
    """The runtime as PID 1 of its namespace (a Kubernetes pod, no init)."""

    def load(self, name):
        spec = importlib.util.spec_from_file_location("pid1_" + name, os.path.join(RUNTIME_DIR, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def test_pid_one_never_kills_everything(self):
        # kill(-1) would kill the engine's exec'd helpers too: as PID 1
        # the reaper kills the leftovers one by one.
        reaper = self.load("reaper")
        calls = []
        real_getpid, real_kill = reaper.os.getpid, reaper.os.kill
        reaper.os.getpid = lambda: 1
        reaper.os.kill = lambda pid, sig: calls.append(pid)
        try:
            reaper.Reaper(True).kill_once(others={4242})
        finally:
            reaper.os.getpid, reaper.os.kill = real_getpid, real_kill
        self.assertEqual(calls, [4242])
        calls.clear()
        reaper.os.getpid = lambda: 7
        reaper.os.kill = lambda pid, sig: calls.append(pid)
        try:
            reaper.Reaper(True).kill_once(others={4242})
        finally:
            reaper.os.getpid, reaper.os.kill = real_getpid, real_kill
        self.assertEqual(calls, [-1])
