"""The sandbox runtime of mcp-server-code-execution-mode (protocol 3).

It runs inside the sandbox container as one long-lived interpreter and
executes the host's code requests in persistent globals. See PROTOCOL.md
beside this file for the contract with the host. Standard library only;
CPython 3.10 to 3.14.
"""

import ast
import asyncio
import base64
import builtins
import codecs
import inspect
import io
import json
import linecache
import math
import os
import queue
import select
import signal
import _signal
import sys
import threading
import time
import traceback
import types

try:
    import mcp_sandbox_outputs as outputs  # sent by the host ahead of this source
except ImportError:  # run from its file (the unit tests): load the sibling
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "mcp_sandbox_outputs", os.path.join(os.path.dirname(os.path.abspath(__file__)), "outputs.py")
    )
    outputs = importlib.util.module_from_spec(_spec)
    sys.modules["mcp_sandbox_outputs"] = outputs
    _spec.loader.exec_module(outputs)

PROTOCOL = 4
# PROGRESS_INTERVAL is the least time between two progress frames of a
# call (seconds); reports in between are folded into the next one.
PROGRESS_INTERVAL = 0.05
# INTERRUPT_PATIENCE is how long an interrupted call's cleanup (finally,
# with) may run before the interrupt is repeated (seconds).
INTERRUPT_PATIENCE = 0.25
# MAX_PROGRESS_MESSAGE bounds a progress report's message (characters).
MAX_PROGRESS_MESSAGE = 1024
RUNTIME_VERSION = "1.0"
MAX_FRAME = 16 << 20
READ_CHUNK = 1 << 16
PUMP_DELAY = 0.001  # seconds an output pump waits before sending what it woke for
CELL_PREFIX = "<run_python#"
# Defaults of an exec frame's image limits.
DEFAULT_MAX_IMAGES = 10
DEFAULT_MAX_IMAGE_BYTES = 8 << 20


class RPCError(Exception):
    """An RPC the host answered with an error."""


class Channel:
    """Writes frames to the private protocol descriptor.

    Between hold() and release() frames are kept and then written at once,
    in order: the end of a call (its last output, progress, files and its
    result) costs one write and one trip through the engine instead of
    one per frame.
    """

    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()
        self.held = None

    def send(self, frame, limit=0):
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("ascii")
        if limit and len(data) > limit:
            raise RPCError("the RPC request is %d bytes, over the %d-byte frame limit" % (len(data), limit))
        with self.lock:
            if self.held is not None:
                self.held.append(data)
                return
            self._write(data)

    def hold(self):
        with self.lock:
            if self.held is None:
                self.held = []

    def release(self):
        """Writes the frames kept since hold()."""
        with self.lock:
            held, self.held = self.held, None
            if held:
                self._write(b"".join(held))

    def _write(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]


def log(msg):
    """Writes a diagnostic line of the runtime itself to the container's stderr."""
    try:
        os.write(Runtime.diag_fd, ("mcp-runtime: " + msg + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


class Pump(threading.Thread):
    """Reads one user output pipe and sends it as `out` frames of the current call.

    The pipe is non-blocking and read under the pump's lock, so the main
    thread can take the lock at the end of a call and drain what is left
    itself: every byte written before the call ended is sent before its
    result, with no hand-off between threads when there is nothing left.
    """

    def __init__(self, rt, stream, rfd):
        super().__init__(name="mcp-pump-" + stream, daemon=True)
        self.rt = rt
        self.stream = stream
        self.rfd = rfd
        self.lock = threading.Lock()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        os.set_blocking(rfd, False)

    def run(self):
        poller = select.poll()
        poller.register(self.rfd, select.POLLIN)
        while True:
            try:
                poller.poll()
            except InterruptedError:
                continue
            # Let a short call end first: the main thread then sends its
            # output itself with the result, in one write, and this
            # thread does not take the interpreter from it meanwhile. A
            # longer call's output is sent PUMP_DELAY after it is written,
            # in fewer, larger frames.
            time.sleep(PUMP_DELAY)
            with self.lock:
                if not self.drain():
                    return

    def drain(self):
        """Sends what the pipe holds now; returns False at end of file."""
        while True:
            try:
                chunk = os.read(self.rfd, READ_CHUNK)
            except BlockingIOError:
                return True
            except InterruptedError:
                continue
            except OSError as e:
                log("output pipe %s failed: %s" % (self.stream, e))
                return False
            if not chunk:
                return False
            self.emit(chunk)

    def finish(self, pending=True):
        """Sends everything written so far, for the end of a call (the pipe
        is read when pending is set)."""
        with self.lock:
            if pending:
                self.drain()
            self.emit(b"", final=True)
            self.decoder.reset()

    def emit(self, data, final=False):
        call = self.rt.call
        if call is None:
            return  # written between calls: nobody to give it to
        text = self.decoder.decode(call.admit(self.stream, data) if data else b"", final)
        if text:
            self.rt.chan.send({"t": "out", "id": call.id, "stream": self.stream, "data": text})


class Call:
    """The state of the call in flight."""

    def __init__(self, id, max_output, progress=False, max_images=DEFAULT_MAX_IMAGES, max_image_bytes=DEFAULT_MAX_IMAGE_BYTES):
        self.id = id
        self.max_output = max_output
        self.sent = {"stdout": 0, "stderr": 0}
        self.dropped = {"stdout": 0, "stderr": 0}
        # images: the limits of the exec frame, what went and what did not.
        self.max_images = max_images
        self.max_image_bytes = max_image_bytes
        self.images = 0
        self.image_bytes = 0
        self.shown = set()  # ids of the figures display() showed
        self.interrupted = False
        self.signals = 0  # interrupts sent to the call so far
        self.ended = threading.Event()  # set when the call has ended
        self.lock = threading.Lock()
        # progress: the host wants progress frames (its client gave a
        # progress token); progress_at is when the last one went,
        # progress_pending the report folded since.
        self.progress = progress
        self.progress_at = 0.0
        self.progress_pending = None
        # progress_lock orders progress frames before the result: once
        # progress_done is set (the call is ending), none is sent.
        self.progress_lock = threading.Lock()
        self.progress_done = False

    def admit_image(self, size):
        """Decides whether an image of size bytes goes to the host: its
        base64 must fit in one frame, and the image within the call's
        limits. Counts it in when it does, as dropped when it does not (an
        image too large for a frame takes nothing from the limits)."""
        with self.lock:
            if (
                (size + 2) // 3 * 4 > MAX_FRAME - 1024  # the length of its base64
                or self.images >= self.max_images
                or self.image_bytes + size > self.max_image_bytes
            ):
                self.dropped["images"] = self.dropped.get("images", 0) + 1
                return False
            self.images += 1
            self.image_bytes += size
        return True

    def admit(self, stream, data):
        """Returns the part of data within the stream's cap; counts the rest."""
        if self.max_output <= 0:
            return data
        with self.lock:
            room = max(0, self.max_output - self.sent[stream])
            kept = data[:room]
            self.sent[stream] += len(kept)
            self.dropped[stream] += len(data) - len(kept)
        return kept


class Runtime:
    diag_fd = 2

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self.call = None
        self.interruptible = False
        self.state_lock = threading.Lock()
        self.inbox = queue.SimpleQueue()
        self.interrupts = queue.SimpleQueue()
        self.rpc_lock = threading.Lock()
        self.rpc_next = 0
        self.rpc_pending = {}
        self.cells = 0
        self.out = outputs.Watch()
        self.progress_wake = threading.Event()
        self.main_ident = threading.get_ident()
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.globals = main.__dict__

    # ------------------------------------------------------------ setup

    def setup_descriptors(self):
        """Moves the protocol to private descriptors and points fds 0-2 elsewhere."""
        self.in_fd = os.dup(0)
        out_fd = os.dup(1)
        Runtime.diag_fd = os.dup(2)
        self.null_fd = os.open(os.devnull, os.O_RDONLY)
        out_r, self.out_w = os.pipe()
        err_r, self.err_w = os.pipe()
        for fd in (self.in_fd, out_fd, Runtime.diag_fd, self.null_fd, out_r, err_r, self.out_w, self.err_w):
            os.set_inheritable(fd, False)
        self.std_ids = {0: file_id(self.null_fd), 1: file_id(self.out_w), 2: file_id(self.err_w)}
        self.chan = Channel(out_fd)
        self.pumps = [Pump(self, "stdout", out_r), Pump(self, "stderr", err_r)]
        self.out_poll = select.poll()
        for p in self.pumps:
            self.out_poll.register(p.rfd, select.POLLIN)
            p.start()
        self.restore_stdio()

    def restore_stdio(self, descriptors=True):
        """Points fds 0-2 and sys.std* back at the runtime's ends, if changed
        (fds 0-2 are looked at when descriptors is set)."""
        if self.stdio_intact(descriptors):
            return
        os.dup2(self.null_fd, 0)
        os.dup2(self.out_w, 1)
        os.dup2(self.err_w, 2)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "rb", closefd=False), encoding="utf-8")
        sys.stdout = self.text_writer(1)
        sys.stderr = self.text_writer(2)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        self.std = (sys.stdin, sys.stdout, sys.stderr)

    def stdio_intact(self, descriptors=True):
        std = getattr(self, "std", None)
        if std is None or (sys.stdin, sys.stdout, sys.stderr) != std or any(f.closed for f in std):
            return False
        if not descriptors:
            return True
        try:
            return all(file_id(fd) == self.std_ids[fd] for fd in (0, 1, 2))
        except OSError:
            return False

    @staticmethod
    def text_writer(fd):
        # Line-buffered, like a terminal: print() costs one write and one
        # frame per line; the rest is flushed when the call ends.
        raw = io.FileIO(fd, "wb", closefd=False)
        return io.TextIOWrapper(
            io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace", line_buffering=True
        )

    # ------------------------------------------------------------ input

    def reader(self):
        """Reads host frames; runs on its own thread."""
        buf = bytearray()
        while True:
            try:
                chunk = os.read(self.in_fd, READ_CHUNK)
            except InterruptedError:
                continue
            except OSError as e:
                log("reading frames: %s" % e)
                chunk = b""
            if not chunk:
                self.inbox.put(None)
                return
            start = len(buf)
            buf += chunk
            while True:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    break
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                start = 0
                try:
                    self.handle(line)
                except Exception as e:  # keep serving: the host decides what is fatal
                    log("handling a frame: %r" % (e,))
            if len(buf) > MAX_FRAME:
                log("frame over %d bytes from the host; stopping" % MAX_FRAME)
                self.inbox.put(None)
                return

    def handle(self, line):
        try:
            msg = json.loads(line)
        except ValueError:
            log("ignoring a malformed frame from the host")
            return
        if not isinstance(msg, dict):
            log("ignoring a frame that is not an object")
            return
        t = msg.get("t")
        if t == "exec":
            # The call becomes current here, on the reader, so an exec or an
            # interrupt read right after it (even in the same chunk) sees it.
            problem, call = None, None
            limits = {}
            for key, default in (
                ("max_output", 0),
                ("max_images", DEFAULT_MAX_IMAGES),
                ("max_image_bytes", DEFAULT_MAX_IMAGE_BYTES),
            ):
                value = msg.get(key)
                if value is None:
                    value = default
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    problem = "%s must be a non-negative integer" % key
                limits[key] = value
            if not isinstance(msg.get("code"), str):
                problem = "exec frame without a string code"
            with self.state_lock:
                if problem is None and self.call is not None:
                    problem = "a call is already running"
                if problem is None:
                    call = self.call = Call(
                        str(msg.get("id")),
                        limits["max_output"],
                        msg.get("progress") is True,
                        limits["max_images"],
                        limits["max_image_bytes"],
                    )
            if problem is not None:
                self.chan.send(
                    {
                        "t": "result",
                        "id": str(msg.get("id")),
                        "status": "error",
                        "exc_type": "ProtocolError",
                        "exc_message": problem,
                        "traceback": "",
                        "duration_ms": 0,
                        "dropped": {"stdout": 0, "stderr": 0},
                        "killed": 0,
                    }
                )
                return
            self.inbox.put((call, msg["code"]))
        elif t == "interrupt":
            with self.state_lock:
                call = self.call
                if call is None or call.id != msg.get("id") or call.interrupted:
                    return
                call.interrupted = True
            # The thread runs already: a call that used up the pids limit
            # leaves no room to start one now.
            self.interrupts.put(call)
        elif t == "rpc_result":
            self.resolve(msg)
        else:
            log("ignoring a frame of unknown type %r" % (t,))

    def interrupter(self):
        """Serves interrupt requests; runs on its own thread from the start."""
        while True:
            self.interrupt(self.interrupts.get())

    def interrupt(self, call):
        """Signals the main thread until the interrupted call ends.

        One KeyboardInterrupt can be swallowed (by an "Exception ignored"
        hook such as os.fork's, or by user code), so it is repeated. The
        processes the call started die first: they would be killed when it
        ends anyway, and a hundred spinning children leave the interpreter
        no CPU to notice its interrupt. The signal goes first all the same:
        outside a container, finding those processes reads every
        /proc/<pid>/stat, and each read hands the GIL to a spinning main
        thread for a switch interval (5 ms), so a busy host made the first
        interrupt seconds late.
        """
        first = True
        while self.call is call:
            if self.interruptible:
                call.signals += 1
                try:
                    signal.pthread_kill(self.main_ident, signal.SIGINT)
                except OSError:
                    return
            self.kill_once()
            # The first interrupt is a plain KeyboardInterrupt, so the
            # code's finally blocks and with statements run; repeats come
            # after INTERRUPT_PATIENCE, each raised again on the next line
            # of the user's cell (see arm_trace).
            # Waiting on the call's end, not sleeping: the next call's
            # interrupt must not wait for this one's pause.
            call.ended.wait(INTERRUPT_PATIENCE if first else 0.05)
            first = False

    # ------------------------------------------------------------ images

    def display(self, *objs, mime=None):
        """Shows each object with the call's result: a matplotlib figure, a
        PIL image, PNG/JPEG/GIF/WebP/SVG bytes (mime= names their type when
        their first bytes do not) or a path to such a file as an image;
        anything else as its text, printed. Images over the call's limits
        are dropped, and the result says how many."""
        for obj in objs:
            image = outputs.to_image(obj, mime)
            if image is None:
                print(outputs.text_of(obj))
                continue
            call = self.call
            if call is None:
                continue  # shown between calls: nobody to give it to
            if callable(getattr(obj, "savefig", None)):
                call.shown.add(id(obj))
            self.send_image(call, *image)

    def send_image(self, call, data, mime):
        """Sends an image frame of the call, if the call admits the image."""
        if call.admit_image(len(data)):
            encoded = base64.b64encode(data).decode("ascii")
            self.chan.send({"t": "image", "id": call.id, "mime": mime, "data": encoded})

    def send_files(self, call, files):
        """Sends the small files out and the images out of the call as file
        frames, before its result; the host reads the others itself."""
        room = max(0, call.max_image_bytes - call.image_bytes)
        for path, data in outputs.inline(files, room):
            frame = {"t": "file", "id": call.id, "path": path, "data": base64.b64encode(data).decode("ascii")}
            try:
                self.chan.send(frame, limit=MAX_FRAME - 1024)
            except RPCError:
                pass  # over the frame size: the host reads it through the engine

    def show_figures(self, call):
        """Shows the figures the call left open (but those display() showed
        already), then closes every figure; a failure is reported on the
        call's stderr."""
        try:
            figures = outputs.open_figures()
            if not figures:
                return
            self.interruptible = True
            try:
                for fig in figures:
                    if id(fig) not in call.shown:
                        self.display(fig)
                outputs.close_figures()
            finally:
                self.interruptible = False
        except BaseException as e:  # the code's figure may be broken; the call is over
            self.interruptible = False
            print("showing the open figures failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)

    # ------------------------------------------------------------ RPC

    def _register(self, slot):
        with self.rpc_lock:
            self.rpc_next += 1
            rid = self.rpc_next
            self.rpc_pending[rid] = slot
        return rid

    @staticmethod
    def check_payload(payload):
        if not isinstance(payload, dict):
            raise TypeError("an RPC payload must be a dict, not %s" % type(payload).__name__)

    async def rpc(self, payload):
        """Sends payload to the host's RPC handler and returns its result."""
        self.check_payload(payload)
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        rid = self._register(("future", loop, fut))
        self._send_rpc(rid, payload)
        return await fut

    def _send_rpc(self, rid, payload):
        """Sends an RPC frame; a request too large or not JSON is refused
        here, with a clear error, before the host would see a broken frame."""
        try:
            self.chan.send({"t": "rpc", "id": rid, "payload": payload}, limit=MAX_FRAME - 1024)
        except BaseException:
            with self.rpc_lock:
                self.rpc_pending.pop(rid, None)
            raise

    def rpc_sync(self, payload):
        """Like rpc, blocking the calling thread instead of awaiting."""
        self.check_payload(payload)
        done = threading.Event()
        box = {}
        rid = self._register(("event", done, box))
        self._send_rpc(rid, payload)
        done.wait()
        if "error" in box:
            raise RPCError(box["error"])
        return box.get("result")

    # ------------------------------------------------------------ progress

    def report_progress(self, progress, total=None, message=None):
        """Tells the client how far the call is: progress out of total
        (when known), with a message. It never blocks the code nor raises:
        without a client that asked for progress it does nothing, reports
        come out at most every PROGRESS_INTERVAL (one made sooner goes out
        when the interval has passed, unless a newer one replaced it; the
        last one of a call always goes, before its result), and values
        that are not finite numbers are ignored."""
        try:
            call = self.call
            if call is None or not call.progress:
                return
            frame = {"t": "progress", "id": call.id, "progress": float(progress)}
            if not math.isfinite(frame["progress"]):
                return
            if total is not None:
                total = float(total)
                if math.isfinite(total) and total > 0:
                    frame["total"] = total
            if message is not None:
                frame["message"] = str(message)[:MAX_PROGRESS_MESSAGE]
            with call.progress_lock:
                if call.progress_done:
                    return
                call.progress_pending = frame
            self.progress_wake.set()
        except Exception:  # a bad argument or a failing __str__: ignored
            pass

    def progress_sender(self):
        """Sends the current call's pending progress report as soon as the
        interval since the last one allows; runs on its own thread."""
        while True:
            self.progress_wake.wait()
            self.progress_wake.clear()
            call = self.call
            while call is not None:
                with call.progress_lock:
                    if call.progress_done or call.progress_pending is None:
                        break
                    wait = call.progress_at + PROGRESS_INTERVAL - time.monotonic()
                    if wait <= 0:
                        frame, call.progress_pending = call.progress_pending, None
                        call.progress_at = time.monotonic()
                        self.chan.send(frame)
                        continue
                time.sleep(wait)

    def flush_progress(self, call):
        """Ends the call's progress: sends its pending report, if any; no
        progress frame of the call follows."""
        with call.progress_lock:
            call.progress_done = True
            frame, call.progress_pending = call.progress_pending, None
            if frame is not None:
                self.chan.send(frame)

    def resolve(self, msg):
        rid = msg.get("id")
        with self.rpc_lock:
            slot = self.rpc_pending.pop(rid, None) if isinstance(rid, int) else None
        if slot is None:
            return
        ok = msg.get("ok") is True
        err = str(msg.get("error") or "RPC failed")
        if slot[0] == "future":
            _, loop, fut = slot

            def settle():
                if fut.done():
                    return
                if ok:
                    fut.set_result(msg.get("result"))
                else:
                    fut.set_exception(RPCError(err))

            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:
                pass  # the loop is closed
        else:
            _, done, box = slot
            if ok:
                box["result"] = msg.get("result")
            else:
                box["error"] = err
            done.set()

    def fail_pending_rpcs(self):
        with self.rpc_lock:
            rids = list(self.rpc_pending)
        for rid in rids:
            self.resolve({"id": rid, "ok": False, "error": "the call ended before the host answered"})

    # ------------------------------------------------------------ calls

    def on_sigint(self, signum, frame):
        if not self.interruptible:
            return  # between calls an interrupt has nothing to stop
        call = self.call
        if call is not None and call.interrupted and call.signals > 1:
            self.arm_trace(frame)
        raise KeyboardInterrupt

    def arm_trace(self, frame):
        """Makes the interrupt land in the user's own code.

        A signal handler runs at the next bytecode, which may be in a hook
        whose exceptions are ignored (os.fork runs the at-fork hooks right
        after the fork, so a fork loop would swallow every interrupt). A
        trace on the innermost frame of the user's cell raises again at its
        next line, where nothing swallows it.
        """
        f = frame
        while f is not None and not f.f_code.co_filename.startswith(CELL_PREFIX):
            f = f.f_back
        if f is None:
            return

        def raise_interrupt(fr, event, arg):
            if self.interruptible and event == "line":
                raise KeyboardInterrupt
            return raise_interrupt

        f.f_trace = raise_interrupt
        f.f_trace_lines = True
        sys.settrace(lambda *args: None)

    def serve(self):
        threading.Thread(target=self.reader, name="mcp-reader", daemon=True).start()
        threading.Thread(target=self.interrupter, name="mcp-interrupt", daemon=True).start()
        threading.Thread(target=self.progress_sender, name="mcp-progress", daemon=True).start()
        self.chan.send(
            {
                "t": "ready",
                "protocol": PROTOCOL,
                "runtime": RUNTIME_VERSION,
                "python": "%d.%d.%d" % sys.version_info[:3],
                "pid": os.getpid(),
                "boot": globals().get("__mcp_boot__", 0.0),
                "sent": time.time(),
            }
        )
        while True:
            item = self.inbox.get()
            if item is None:
                return
            self.run_call(*item)

    def run_call(self, call, code):
        # The previous call ended with every descriptor checked; between
        # calls only its threads could have moved them, so the Python
        # objects are checked here and the descriptors at the end.
        self.restore_stdio(descriptors=False)
        if _signal.getsignal(signal.SIGINT) != self.on_sigint:  # signal.getsignal builds an enum
            signal.signal(signal.SIGINT, self.on_sigint)
        result = {"t": "result", "id": call.id}
        self.out.start()
        start = time.perf_counter()
        try:
            result.update(self.execute(code, call.id))
        except BaseException as e:  # anything the guarded section let through
            self.interruptible = False
            result.update(self.describe(e, "interrupted" if isinstance(e, KeyboardInterrupt) else "error"))
        self.interruptible = False
        sys.settrace(None)
        if result["status"] != "interrupted":
            self.show_figures(call)
        result["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # user code may have put anything there
                pass
        result["killed"] = self.kill_leftovers()
        files, more = self.out.changes()
        if files:
            result["files"] = files
            self.send_files(call, files)
        if more:
            call.dropped["files"] = more
        self.fail_pending_rpcs()
        self.restore_stdio()
        self.chan.hold()
        try:
            self.sync_output()
            self.flush_progress(call)
            result["dropped"] = dict(call.dropped)
            with self.state_lock:
                self.call = None
            call.ended.set()
            self.chan.send(result)
        finally:
            self.chan.release()

    def execute(self, source, call_id):
        """Compiles and runs source; returns the status members of the result.

        A `started` frame tells the host, before the first line of user
        code runs, that the code was compiled and is about to run: a
        sandbox that dies before the host reads it ran none of it.
        """
        self.cells += 1
        filename = "%s%d>" % (CELL_PREFIX, self.cells)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        except (SyntaxError, ValueError, OverflowError) as e:
            return self.describe(e, "error")
        # interruptible is a plain attribute, not guarded by a lock: a
        # KeyboardInterrupt raised while a lock is being taken could leave
        # it held.
        self.chan.send({"t": "started", "id": call_id})
        try:
            self.interruptible = True
            try:
                if code.co_flags & inspect.CO_COROUTINE:
                    self.run_coroutine(eval(code, self.globals))
                else:
                    exec(code, self.globals)
            finally:
                self.interruptible = False
        except KeyboardInterrupt as e:
            self.interruptible = False
            return self.describe(e, "interrupted")
        except SystemExit as e:
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)  # as the interpreter does at exit
            return {"status": "exit", "exit_code": exit_code(e.code)}
        except BaseException as e:
            return self.describe(e, "error")
        return {"status": "ok"}

    def run_coroutine(self, coro):
        task = self.loop.create_task(coro)
        try:
            self.loop.run_until_complete(task)
        except BaseException:
            if not task.done():
                # Interrupted while the loop waited: let the task unwind.
                task.cancel()
                try:
                    self.loop.run_until_complete(asyncio.wait([task], timeout=1.0))
                except BaseException:
                    pass
            raise

    def describe(self, e, status):
        """Result members for exception e, its traceback without runtime frames."""
        tb = e.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(CELL_PREFIX):
            tb = tb.tb_next
        if isinstance(e, SyntaxError):
            lines = traceback.format_exception_only(type(e), e)
        else:
            te = traceback.TracebackException(type(e), e, tb)
            te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != RUNTIME_FILE])
            lines = te.format()
        return {
            "status": status,
            "exc_type": type(e).__name__,
            "exc_message": str(e),
            "traceback": "".join(lines),
        }

    # ------------------------------------------------------------ after a call

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
        """Sends SIGKILL to the leftover processes once and reaps them."""
        if self.sandbox:
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
            return {p for p in procs if p not in (1, me)}
        mine = set()
        frontier = {me}
        while frontier:
            frontier = {p for p, pp in procs.items() if pp in frontier and p not in mine}
            mine |= frontier
        mine.discard(me)
        return mine

    @staticmethod
    def reap():
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return

    def sync_output(self):
        """Sends the output written before now, before the call's result.

        One poll finds the pipes holding output; the others are not read
        (a pump in the middle of sending holds its lock, which finish
        waits for)."""
        try:
            ready = {fd for fd, _ in self.out_poll.poll(0)}
        except InterruptedError:
            ready = None
        for pump in self.pumps:
            pump.finish(ready is None or pump.rfd in ready)


RUNTIME_FILE = Runtime.on_sigint.__code__.co_filename


def in_container():
    """Reports whether this process runs in a Docker or Podman container."""
    return os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")


def file_id(fd):
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def exit_code(code):
    """The exit status a process would get from sys.exit(code), as an int
    the host can read (bools are ints to Python, not to JSON)."""
    if code is None:
        return 0
    if isinstance(code, int):
        code = int(code)
        return code if -(2**31) <= code < 2**31 else 1
    return 1


def main():
    # kill(-1) is only safe in the sandbox's own PID namespace: never as
    # root, never outside a container.
    sandbox = "sandbox" in sys.argv[1:] and os.getuid() != 0 and in_container()
    rt = Runtime(sandbox)
    rt.setup_descriptors()
    module = types.ModuleType("mcp_sandbox_runtime")
    module.rpc = rt.rpc
    module.rpc_sync = rt.rpc_sync
    module.report_progress = rt.report_progress
    module.display = rt.display
    builtins.display = rt.display
    outputs.install_backend()
    module.RPCError = RPCError
    module.PROTOCOL = PROTOCOL
    sys.modules["mcp_sandbox_runtime"] = module
    signal.signal(signal.SIGINT, rt.on_sigint)
    try:
        rt.serve()
    finally:
        os._exit(0)


if __name__ in ("__main__", "__mcp_runtime__"):
    main()
