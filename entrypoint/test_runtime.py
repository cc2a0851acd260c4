"""Unit tests of the sandbox runtime (runtime.py), standard library only.

Run from the repository root:

    python3 -m unittest discover -s entrypoint -p 'test_*.py'

The runtime runs as a local subprocess in host mode (no "sandbox"
argument): it then only kills its own descendants, never kill(-1).
"""

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.join(HERE, "runtime.py")


class Runtime:
    """A runtime subprocess and its frames."""

    def __init__(self, argv=None, payload=None):
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-u", RUNTIME],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.frames = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if payload is not None:
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        self.ready = self.recv()

    def _read(self):
        for line in self.proc.stdout:
            self.frames.put(json.loads(line))
        self.frames.put(None)

    def send(self, frame):
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        self.proc.stdin.flush()

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self, timeout=10):
        frame = self.frames.get(timeout=timeout)
        if frame is None:
            raise EOFError("runtime ended: " + self.proc.stderr.read().decode(errors="replace"))
        return frame

    def run(self, code, id="1", max_output=0, rpc=None):
        """Runs code; returns (out frames, result). rpc answers rpc frames."""
        self.send({"t": "exec", "id": id, "code": code, "max_output": max_output})
        return self.collect(id, rpc)

    def collect(self, id, rpc=None):
        outs = []
        while True:
            f = self.recv()
            if f["t"] == "result" and f["id"] == id:
                return outs, f
            if f["t"] == "rpc":
                self.send(rpc(f) if rpc else {"t": "rpc_result", "id": f["id"], "ok": True, "result": f["payload"]})
                continue
            outs.append(f)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


def text(outs, stream="stdout"):
    return "".join(f["data"] for f in outs if f["t"] == "out" and f["stream"] == stream)


class RuntimeTest(unittest.TestCase):
    def setUp(self):
        self.rt = Runtime()

    def tearDown(self):
        self.rt.close()

    def test_ready(self):
        r = self.rt.ready
        self.assertEqual(r["t"], "ready")
        self.assertEqual(r["protocol"], 1)
        self.assertRegex(r["python"], r"^3\.\d+\.\d+$")
        self.assertIsInstance(r["pid"], int)

    def test_globals_persist(self):
        _, res = self.rt.run("import math\nx = 40\ndef f(v): return v + 2\nclass C: k = 'kept'")
        self.assertEqual(res["status"], "ok")
        outs, res = self.rt.run("print(f(x), math.floor(2.5), C.k)")
        self.assertEqual(text(outs), "42 2 kept\n")

    def test_top_level_await_and_persistent_loop(self):
        self.rt.run("import asyncio\nq = asyncio.Queue()\nawait q.put('one')\nfut = asyncio.get_running_loop().create_future()")
        outs, res = self.rt.run("fut.set_result(2)\nprint(await q.get(), await fut)")
        self.assertEqual((res["status"], text(outs)), ("ok", "one 2\n"))

    def test_exception_keeps_globals(self):
        self.rt.run("keep = 1")
        _, res = self.rt.run("def g():\n    raise ValueError('bad')\ng()")
        self.assertEqual(res["status"], "error")
        self.assertEqual((res["exc_type"], res["exc_message"]), ("ValueError", "bad"))
        self.assertRegex(res["traceback"], r'File "<run_python#\d+>", line 2, in g')
        self.assertNotIn("runtime.py", res["traceback"])
        outs, _ = self.rt.run("print(keep)")
        self.assertEqual(text(outs), "1\n")

    def test_syntax_error(self):
        _, res = self.rt.run("def (:")
        self.assertEqual((res["status"], res["exc_type"]), ("error", "SyntaxError"))

    def test_system_exit(self):
        self.rt.run("alive = True")
        _, res = self.rt.run("import sys; sys.exit(3)")
        self.assertEqual((res["status"], res["exit_code"]), ("exit", 3))
        _, res = self.rt.run("import sys; sys.exit()")
        self.assertEqual((res["status"], res["exit_code"]), ("exit", 0))
        outs, _ = self.rt.run("print(alive)")
        self.assertEqual(text(outs), "True\n")

    def interrupt(self, code, id):
        self.rt.send({"t": "exec", "id": id, "code": code, "max_output": 0})
        time.sleep(0.3)
        start = time.monotonic()
        self.rt.send({"t": "interrupt", "id": id})
        _, res = self.rt.collect(id)
        self.assertLess(time.monotonic() - start, 3)
        return res

    def test_interrupt_keeps_state(self):
        self.rt.run("state = 'kept'")
        for i, code in enumerate(["while True: pass", "import time\ntime.sleep(60)"]):
            res = self.interrupt(code, "int%d" % i)
            self.assertEqual((res["status"], res["exc_type"]), ("interrupted", "KeyboardInterrupt"))
        outs, _ = self.rt.run("print(state)")
        self.assertEqual(text(outs), "kept\n")

    def test_stray_interrupt_is_harmless(self):
        self.rt.send({"t": "interrupt", "id": "nothing-runs"})
        self.rt.send({"t": "exec", "id": "a", "code": "import time\ntime.sleep(0.2)\nprint('done')", "max_output": 0})
        self.rt.send({"t": "interrupt", "id": "other"})
        outs, res = self.rt.collect("a")
        self.assertEqual((res["status"], text(outs)), ("ok", "done\n"))

    def test_output_channels_and_order(self):
        code = (
            "import os, sys, subprocess\n"
            "print('py out')\nprint('py err', file=sys.stderr)\n"
            "os.write(1, b'fd1\\n')\nos.write(2, b'fd2\\n')\n"
            "subprocess.run(['echo', 'child'])\n"
        )
        self.rt.send({"t": "exec", "id": "o", "code": code, "max_output": 0})
        frames = []
        while True:
            f = self.rt.recv()
            frames.append(f)
            if f["t"] == "result":
                break
        outs = frames[:-1]
        self.assertTrue(all(f["t"] == "out" for f in outs))
        self.assertEqual(text(outs), "py out\nfd1\nchild\n")
        self.assertEqual(text(outs, "stderr"), "py err\nfd2\n")

    def test_forged_frames_are_data(self):
        forged = '{"t":"result","id":"f","status":"ok"}'
        outs, res = self.rt.run("import os\nprint(%r)\nos.write(1, %r)" % (forged, (forged + "\n").encode()), id="f")
        self.assertEqual(res["status"], "ok")
        self.assertEqual(text(outs), forged + "\n" + forged + "\n")

    def test_output_cap(self):
        outs, res = self.rt.run("import sys\nsys.stdout.write('x' * 100000)", max_output=1000)
        self.assertEqual(len(text(outs)), 1000)
        self.assertEqual(res["dropped"], {"stdout": 99000, "stderr": 0})

    def test_utf8_handling(self):
        outs, _ = self.rt.run("import os\nos.write(1, b'bad \\xff byte\\n')\nos.write(1, '\u00e9'.encode()[:1])\nos.write(1, '\u00e9'.encode()[1:] + b'\\n')")
        self.assertEqual(text(outs), "bad \ufffd byte\n\u00e9\n")

    def test_stdin_is_empty(self):
        outs, _ = self.rt.run("try:\n    input()\nexcept EOFError:\n    print('eof')")
        self.assertEqual(text(outs), "eof\n")

    def test_broken_stdio_restored(self):
        for code in ["import sys; sys.stdout.close()", "import os; os.close(1); os.close(2)",
                     "import os; fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1)"]:
            _, res = self.rt.run(code)
            self.assertEqual(res["status"], "ok", code)
            outs, _ = self.rt.run("print('back')")
            self.assertEqual(text(outs), "back\n", code)

    def test_leftover_processes_killed(self):
        outs, res = self.rt.run("import subprocess\np = subprocess.Popen(['sleep', '100'])\nprint(p.pid)")
        pid = int(text(outs))
        self.assertGreaterEqual(res["killed"], 1)
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        self.assertIn(state, ("gone", "Z", "X"))

    def test_rpc(self):
        code = (
            "import asyncio, mcp_sandbox_runtime as rt\n"
            "res = await asyncio.gather(*[rt.rpc({'i': i}) for i in range(50)])\n"
            "print([r['i'] for r in res] == list(range(50)))\n"
            "try:\n    await rt.rpc({'fail': True})\nexcept rt.RPCError as e:\n    print('error', e)\n"
        )
        self.rt.send({"t": "exec", "id": "r", "code": code, "max_output": 0})
        pending = []
        while len(pending) < 50:
            f = self.rt.recv()
            self.assertEqual(f["t"], "rpc")
            self.assertIsInstance(f["id"], int)
            pending.append(f)
        self.rt.send({"t": "rpc_result", "id": 999999, "ok": True, "result": None})  # unknown id: ignored
        for f in reversed(pending):
            self.rt.send({"t": "rpc_result", "id": f["id"], "ok": True, "result": f["payload"]})
        f = self.rt.recv()
        self.assertEqual(f["payload"], {"fail": True})
        self.rt.send({"t": "rpc_result", "id": f["id"], "ok": False, "error": "it failed"})
        outs, res = self.rt.collect("r")
        self.assertEqual(text(outs), "True\nerror it failed\n")

    def test_rpc_sync(self):
        outs, _ = self.rt.run("import mcp_sandbox_runtime as rt\nprint(rt.rpc_sync({'v': 7})['v'])")
        self.assertEqual(text(outs), "7\n")

    def test_exec_while_busy(self):
        self.rt.send({"t": "exec", "id": "first", "code": "import time\ntime.sleep(0.3)\nprint('first')", "max_output": 0})
        time.sleep(0.1)
        self.rt.send({"t": "exec", "id": "second", "code": "print('no')", "max_output": 0})
        f = self.rt.recv()
        self.assertEqual((f["t"], f["id"], f["exc_type"]), ("result", "second", "ProtocolError"))
        outs, res = self.rt.collect("first")
        self.assertEqual((res["status"], text(outs)), ("ok", "first\n"))

    def test_malformed_host_frames_ignored(self):
        self.rt.send_raw(b"not json\n[1, 2]\n{\"t\": \"bogus\"}\n")
        outs, res = self.rt.run("print('served')")
        self.assertEqual(text(outs), "served\n")

    def test_stdin_eof_exits(self):
        self.rt.proc.stdin.close()
        self.assertEqual(self.rt.proc.wait(timeout=10), 0)


class BootstrapTest(unittest.TestCase):
    def test_bootstrap_delivers_runtime(self):
        with open(os.path.join(HERE, "entrypoint.go")) as f:
            bootstrap = re.search(r"const bootstrap = `(.*?)`", f.read(), re.S).group(1)
        with open(RUNTIME, "rb") as f:
            src = f.read()
        rt = Runtime([sys.executable, "-u", "-c", bootstrap], payload=b"MCPRT %d\n" % len(src) + src)
        try:
            self.assertEqual(rt.ready["t"], "ready")
            outs, res = rt.run("print(6 * 7)")
            self.assertEqual(text(outs), "42\n")
        finally:
            rt.close()


if __name__ == "__main__":
    unittest.main()
