"""Tests of the runtime's lowering of its own rlimits (runtime/limits.py),
which a Kubernetes pod, with no rlimits of its own, relies on.

A hard limit once lowered cannot be raised again: every lowering runs in a
child interpreter of its own.

Run with: python3 -m unittest discover -s entrypoint -p 'test_*.py'
"""

import json
import os
import resource
import subprocess
import sys
import textwrap
import unittest

from runtime_harness import TIMEOUT, Runtime, load_runtime_modules, module_path, stream_text

LIMITS_PATH = module_path("limits")


def in_child(source, env=None):
    """Runs source in a child interpreter with the module loaded as
    `limits`; returns its standard output parsed as JSON."""
    prelude = (
        "import importlib.util, json, os, resource, sys\n"
        "spec = importlib.util.spec_from_file_location('mcp_sandbox_limits', %r)\n"
        "limits = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(limits)\n" % LIMITS_PATH
    )
    r = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
    )
    if r.returncode != 0:
        raise AssertionError("exit %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


class ParseTest(unittest.TestCase):
    def setUp(self):
        self.limits = load_runtime_modules()["limits"]

    def test_parse(self):
        self.assertEqual(self.limits.parse("nofile=1024,nproc=128"), {"nofile": 1024, "nproc": 128})
        self.assertEqual(self.limits.parse("nofile=64"), {"nofile": 64})

    def test_refused(self):
        for bad in ("", "nofile", "nofile=", "nofile=-1", "nofile=0", "nofile=1e3", "core=0", "nofile=64;nproc=2"):
            with self.assertRaises(ValueError, msg=bad):
                self.limits.parse(bad)

    def test_never_raised(self):
        inf = resource.RLIM_INFINITY
        self.assertEqual(self.limits.lowered(inf, 128), 128)
        self.assertEqual(self.limits.lowered(4096, 128), 128)
        self.assertEqual(self.limits.lowered(64, 128), 64)


class LowerTest(unittest.TestCase):
    def test_lowered_soft_and_hard(self):
        got = in_child(
            """
            print(json.dumps(limits.lower({"nofile": 100, "nproc": 200})
                             | {"now": [resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_NPROC)]}))
            """
        )
        self.assertEqual(got["nofile"], [100, 100])
        self.assertEqual(got["nproc"], [200, 200])
        self.assertEqual(got["now"], [[100, 100], [200, 200]])

    def test_never_raised(self):
        # A hard limit already under the one named stays; a soft one
        # under it stays too.
        got = in_child(
            """
            resource.setrlimit(resource.RLIMIT_NOFILE, (40, 50))
            resource.setrlimit(resource.RLIMIT_NPROC, (30, resource.getrlimit(resource.RLIMIT_NPROC)[1]))
            print(json.dumps(limits.lower({"nofile": 1024, "nproc": 300})))
            """
        )
        self.assertEqual(got["nofile"], [40, 50])
        self.assertEqual(got["nproc"][0], 30)
        self.assertLessEqual(got["nproc"][1], 300)

    def test_enforced(self):
        got = in_child(
            """
            limits.lower({"nofile": 32})
            fds = []
            try:
                while True:
                    fds.append(os.open("/dev/null", os.O_RDONLY))
            except OSError as e:
                print(json.dumps({"errno": e.errno, "opened": len(fds), "max": max(fds)}))
            """
        )
        self.assertEqual(got["errno"], 24)  # EMFILE
        self.assertLess(got["max"], 32)

    def test_from_environ(self):
        env = dict(os.environ, MCP_SANDBOX_RLIMITS="nofile=77")
        got = in_child(
            """
            got = limits.lower_from_environ()
            print(json.dumps({"got": got, "left": "MCP_SANDBOX_RLIMITS" in os.environ}))
            """,
            env=env,
        )
        self.assertEqual(got, {"got": {"nofile": [77, 77]}, "left": False})
        self.assertEqual(in_child("print(json.dumps(limits.lower_from_environ()))"), {})

    def test_bad_value_ends_it(self):
        env = dict(os.environ, MCP_SANDBOX_RLIMITS="nofile=lots")
        with self.assertRaisesRegex(AssertionError, "cannot lower its limits: bad rlimit"):
            in_child("limits.lower_from_environ()", env=env)


class RuntimeLimitsTest(unittest.TestCase):
    """The runtime lowers its limits at start, before the first call, as
    a pod's environment names them, and hides the variable from code."""

    def test_runtime_lowers_at_start(self):
        os.environ["MCP_SANDBOX_RLIMITS"] = "nofile=99"
        try:
            rt = Runtime()
        finally:
            del os.environ["MCP_SANDBOX_RLIMITS"]
        self.addCleanup(rt.close)
        self.assertEqual(rt.recv()["t"], "ready")
        outs, result = rt.run(
            "import os, resource\nprint(resource.getrlimit(resource.RLIMIT_NOFILE), 'MCP_SANDBOX_RLIMITS' in os.environ)",
            "call-1",
        )
        self.assertEqual(result["status"], "ok", result)
        self.assertEqual(stream_text(outs), "(99, 99) False\n")


if __name__ == "__main__":
    unittest.main()
