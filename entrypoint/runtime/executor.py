"""Running the host's code: the call in flight, its code, its interrupts.

Installed in the sandbox as the module `mcp_sandbox_executor`. The
executor compiles a call's code as a cell `<run_python#N>`, runs it in the
persistent globals (on the persistent event loop when it awaits),
interrupts it with SIGINT when the host asks, and describes how it ended,
with a traceback of the user's frames only. Standard library only.
"""

import ast
import asyncio
import builtins
import inspect
import linecache
import queue
import signal
import _signal
import sys
import threading
import traceback
import types

import mcp_sandbox_channel as channel

# INTERRUPT_PATIENCE is how long an interrupted call's cleanup (finally,
# with) may run before the interrupt is repeated (seconds).
INTERRUPT_PATIENCE = 0.25
CELL_PREFIX = "<run_python#"
# Defaults of an exec frame's image limits.
DEFAULT_MAX_IMAGES = 10
DEFAULT_MAX_IMAGE_BYTES = 8 << 20


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
                (size + 2) // 3 * 4 > channel.MAX_FRAME - 1024  # the length of its base64
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


class Executor:
    """Runs calls' code in the persistent globals of __main__ and stops it
    on request.

    chan carries the `started` frame, reaper kills what an interrupted call
    started, and current() is the call in flight (None between calls).
    hidden_files names the runtime's own source files, whose frames no
    traceback of user code shows.
    """

    def __init__(self, chan, reaper, current, hidden_files=()):
        self.chan = chan
        self.reaper = reaper
        self.current = current
        self.hidden_files = frozenset(hidden_files)
        self.interruptible = False
        self.interrupts = queue.SimpleQueue()
        self.cells = 0
        self.main_ident = threading.get_ident()
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.globals = main.__dict__

    # ------------------------------------------------------------ interrupts

    def on_sigint(self, signum, frame):
        if not self.interruptible:
            return  # between calls an interrupt has nothing to stop
        call = self.current()
        if call is not None and call.interrupted and call.signals > 1:
            self.arm_trace(frame)
        raise KeyboardInterrupt

    def install_sigint(self):
        """Makes on_sigint the SIGINT handler again, if code replaced it."""
        if _signal.getsignal(signal.SIGINT) != self.on_sigint:  # signal.getsignal builds an enum
            signal.signal(signal.SIGINT, self.on_sigint)

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

    def request_interrupt(self, call):
        """Has the interrupter thread stop call (marked interrupted)."""
        # The thread runs already: a call that used up the pids limit
        # leaves no room to start one now.
        self.interrupts.put(call)

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
        while self.current() is call:
            if self.interruptible:
                call.signals += 1
                try:
                    signal.pthread_kill(self.main_ident, signal.SIGINT)
                except OSError:
                    return
            self.reaper.kill_once()
            # The first interrupt is a plain KeyboardInterrupt, so the
            # code's finally blocks and with statements run; repeats come
            # after INTERRUPT_PATIENCE, each raised again on the next line
            # of the user's cell (see arm_trace).
            # Waiting on the call's end, not sleeping: the next call's
            # interrupt must not wait for this one's pause.
            call.ended.wait(INTERRUPT_PATIENCE if first else 0.05)
            first = False

    # ------------------------------------------------------------ running code

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
            te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename not in self.hidden_files])
            lines = te.format()
        return {
            "status": status,
            "exc_type": type(e).__name__,
            "exc_message": str(e),
            "traceback": "".join(lines),
        }


def exit_code(code):
    """The exit status a process would get from sys.exit(code), as an int
    the host can read (bools are ints to Python, not to JSON)."""
    if code is None:
        return 0
    if isinstance(code, int):
        code = int(code)
        return code if -(2**31) <= code < 2**31 else 1
    return 1
