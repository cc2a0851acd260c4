"""The harness of the runtime's unit tests (standard library only): the
runtime's program as the host ships it (entrypoint.go's bootstrap, prelude
and runtimeProgram, read from that file), and Runtime, one runtime run as a
subprocess of this interpreter in host mode (its modules shipped from their
files, as the host's prelude ships them, then runtime.py run as __main__),
that is without the "sandbox" argument, so it only kills its own
descendants and never calls kill(-1). Frames go to its stdin and come back
from its stdout as in PROTOCOL.md; every wait has a timeout, so a hung
runtime fails a test instead of hanging it.

The test_*.py files beside it import it; it holds no tests itself.
"""

import atexit
import importlib.util
import json
import os
import queue
import re
import subprocess
import sys
from subprocess import PIPE
import tempfile
import textwrap
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME_DIR = os.path.join(HERE, "runtime")
RUNTIME_PATH = os.path.join(RUNTIME_DIR, "runtime.py")
SANDBOX_API_PATH = os.path.join(HERE, "sandbox_api", "sandbox_api.py")
ENTRYPOINT_GO = os.path.join(HERE, "entrypoint.go")
TIMEOUT = 5.0  # seconds to wait for any one frame or call

OUT_KEYS = {"t", "id", "stream", "data"}


def code(text):
    """Dedents a block of user code written inside a test."""
    return textwrap.dedent(text).lstrip("\n")


def stream_text(outs, stream="stdout"):
    return "".join(f["data"] for f in outs if f["stream"] == stream)


def bootstrap_source():
    """The Go const `bootstrap` of entrypoint.go, as the container runs it."""
    with open(ENTRYPOINT_GO, encoding="utf-8") as f:
        text = f.read()
    start = text.index("const bootstrap = `") + len("const bootstrap = `")
    return text[start : text.index("`", start)]


def runtime_modules():
    """The names of the Go var `runtimeModules` of entrypoint.go, in the
    order the host installs them."""
    with open(ENTRYPOINT_GO, encoding="utf-8") as f:
        text = f.read()
    listed = re.search(r"var runtimeModules = \[\]string\{([^}]*)\}", text).group(1)
    return re.findall(r'"([^"]+)"', listed)


def module_path(name):
    return os.path.join(RUNTIME_DIR, name + ".py")


def prelude_source():
    """The Go const `prelude` of entrypoint.go, its table to fill in."""
    with open(ENTRYPOINT_GO, encoding="utf-8") as f:
        text = f.read()
    start = text.index("const prelude = `") + len("const prelude = `")
    return text[start : text.index("`", start)]


def runtime_prelude(real_files=False):
    """The prelude of runtimeProgram in entrypoint.go: its finder has each
    runtime module as mcp_sandbox_<name>, compiled as "<mcp-<name>>" (or
    as its file's path, with real_files), and the sandbox API as
    mcp_sandbox_api, compiled as "<mcp-sandbox-api>" with its lines kept."""
    entries = []
    for name in runtime_modules():
        with open(module_path(name), encoding="utf-8") as f:
            source = f.read()
        filename = module_path(name) if real_files else "<mcp-%s>" % name
        entries.append("    %s: (%s, %s, False),\n" % (json.dumps("mcp_sandbox_" + name), json.dumps(filename), json.dumps(source)))
    with open(SANDBOX_API_PATH, encoding="utf-8") as f:
        source = f.read()
    entries.append("    %s: (%s, %s, True),\n" % (json.dumps("mcp_sandbox_api"), json.dumps("<mcp-sandbox-api>"), json.dumps(source)))
    return prelude_source() % "".join(entries)


def runtime_program():
    """The program the host sends (runtimeProgram of entrypoint.go): the
    prelude, then the main program."""
    with open(RUNTIME_PATH, "rb") as f:
        runtime = f.read()
    return runtime_prelude().encode("utf-8") + runtime


def host_program():
    """The program of a runtime in host mode: the prelude with the modules'
    own paths, then runtime.py run from its file as __main__, so that its
    frames name their files as they would when run as a script."""
    return runtime_prelude(real_files=True) + (
        "exec(compile(open(%r, encoding='utf-8').read(), %r, 'exec'), {'__name__': '__main__'})\n"
        % (RUNTIME_PATH, RUNTIME_PATH)
    )


def host_argv():
    """The command of a runtime in host mode: host_program() run as the
    code of -c runs (in __main__, compiled as "<string>"), read from a file
    written once, since its modules' sources pass Linux's limit on a single
    argument (128 KiB)."""
    global HOST_PROGRAM_FILE
    if HOST_PROGRAM_FILE is None:
        fd, path = tempfile.mkstemp(prefix="mcp-host-runtime-", suffix=".py")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(host_program())
        atexit.register(os.unlink, path)
        HOST_PROGRAM_FILE = path
    read = "exec(compile(open(%r, encoding='utf-8').read(), '<string>', 'exec'))" % HOST_PROGRAM_FILE
    return [sys.executable, "-u", "-c", read]


HOST_PROGRAM_FILE = None  # host_argv's file


def load_runtime_modules():
    """Imports the runtime's modules into this interpreter, each from its
    file as mcp_sandbox_<name>, as the prelude installs them; returns them
    by name."""
    modules = {}
    for name in runtime_modules():
        full = "mcp_sandbox_" + name
        if full not in sys.modules:
            spec = importlib.util.spec_from_file_location(full, module_path(name))
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module
            spec.loader.exec_module(module)
        modules[name] = sys.modules[full]
    return modules


def wait_until(predicate, timeout=2.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def process_gone(pid):
    """True if pid no longer runs: absent from /proc, or a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")


def encode_frame(frame):
    """A frame's bytes on the wire: its line and, for a frame with a
    `payload`, those bytes after it (PROTOCOL.md)."""
    frame = dict(frame)
    payload = frame.pop("payload", None)
    if payload is None:
        return json.dumps(frame).encode() + b"\n"
    frame["len"] = len(payload)
    return json.dumps(frame).encode() + b"\n" + payload


class Runtime:
    """One runtime subprocess: frames to its stdin, frames from its stdout."""

    def __init__(self, argv=None, payload=None):
        argv = argv or host_argv()  # never with "sandbox"
        self.proc = subprocess.Popen(argv, stdin=PIPE, stdout=PIPE, stderr=PIPE)
        self.frames = queue.Queue()
        self.stderr = bytearray()  # the runtime's own diagnostics
        self.readers = [threading.Thread(target=f, daemon=True) for f in (self._read_frames, self._read_stderr)]
        for t in self.readers:
            t.start()
        if payload is not None:
            self.write(payload)

    def _read_frames(self):
        for line in self.proc.stdout:
            try:
                frame = json.loads(line)
            except ValueError:
                frame = {"t": "<not JSON>", "line": line.decode("utf-8", "replace")}
            if isinstance(frame, dict) and isinstance(frame.get("len"), int):
                frame["payload"] = self.proc.stdout.read(frame["len"])
            self.frames.put(frame)
        self.frames.put(None)  # end of file

    def _read_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read1(1 << 16), b""):
            self.stderr += chunk

    def write(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise AssertionError("the runtime closed its stdin (exit %r)" % self.proc.poll())

    def send(self, *frames):
        """Sends frames in one write, so the runtime reads them together; a
        frame's `payload` (bytes) goes as its raw bytes after the line,
        with `len` set to their count."""
        self.write(b"".join(encode_frame(f) for f in frames))

    def recv(self, timeout=TIMEOUT):
        try:
            frame = self.frames.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no frame within %.1fs; stderr: %r" % (timeout, bytes(self.stderr)))
        if frame is None:
            self.frames.put(None)
            raise AssertionError("the runtime ended (exit %r); stderr: %r" % (self.proc.poll(), bytes(self.stderr)))
        return frame

    def exec(self, source, id, max_output=0):
        self.send({"t": "exec", "id": id, "code": source, "max_output": max_output})

    def exec_started(self, source, id):
        """Sends an exec and reads its `started` frame, the first one of a call."""
        self.exec(source, id)
        frame = self.recv()
        if frame != {"t": "started", "id": id}:
            raise AssertionError("the first frame of call %r: %r, want started" % (id, frame))

    def collect(self, id, timeout=TIMEOUT):
        """Returns (out frames, result) of call id; any other frame fails.

        A `started` frame of the call must come once, before its output;
        self.started says whether it came.
        """
        outs = []
        self.started = False
        deadline = time.monotonic() + timeout
        while True:
            frame = self.recv(max(0.01, deadline - time.monotonic()))
            if frame.get("t") == "started" and frame.get("id") == id:
                if self.started or outs or set(frame) != {"t", "id"}:
                    raise AssertionError("a started frame twice, after output, or with other members: %r" % (frame,))
                self.started = True
            elif frame.get("t") == "out" and frame.get("id") == id:
                if set(frame) != OUT_KEYS or frame["stream"] not in ("stdout", "stderr"):
                    raise AssertionError("bad out frame: %r" % (frame,))
                outs.append(frame)
            elif frame.get("t") == "result" and frame.get("id") == id:
                return outs, frame
            else:
                raise AssertionError("unexpected frame during call %r: %r" % (id, frame))

    def run(self, source, id, max_output=0, timeout=TIMEOUT):
        self.exec(source, id, max_output)
        return self.collect(id, timeout)

    def wait_stderr(self, text):
        return wait_until(lambda: text.encode() in self.stderr)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        for t in self.readers:
            t.join(timeout=TIMEOUT)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass
