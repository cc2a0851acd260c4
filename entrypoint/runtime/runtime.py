"""The sandbox runtime of mcp-server-code-execution-mode (protocol 7).

It runs inside the sandbox container as one long-lived interpreter and
executes the host's code requests in persistent globals. See PROTOCOL.md
in entrypoint/ for the contract with the host. Standard library only;
CPython 3.10 to 3.14.

This is the main program; the host ships the runtime's other modules
with it (see runtimeProgram in entrypoint.go), each of one concern:

    mcp_sandbox_outputs   images, the matplotlib backend, the files-out watch
    mcp_sandbox_channel   frames to and from the host, diagnostics
    mcp_sandbox_reaper    killing the processes a call leaves behind
    mcp_sandbox_limits    lowering its own rlimits where the engine sets none
    mcp_sandbox_executor  the call in flight: running its code, interrupts
    mcp_sandbox_display   sending a call's output, images, figures, files
    mcp_sandbox_rpc       RPCs and progress reports of user code
    mcp_sandbox_egress    the proxy endpoint whose connections the host carries

The Runtime here composes them: it sets up the standard streams, serves
the host's frames and takes each call from its start to its result.
"""

import builtins
import io
import os
import queue
import signal
import site
import socket
import sys
import threading
import time
import types

import mcp_sandbox_channel as channel
import mcp_sandbox_display as display
import mcp_sandbox_egress as egress
import mcp_sandbox_executor as executor
import mcp_sandbox_limits as limits
import mcp_sandbox_outputs as outputs
import mcp_sandbox_reaper as reaper
import mcp_sandbox_rpc as rpc

PROTOCOL = 7
RUNTIME_VERSION = "1.1"

# SOCKET is where a persistent sandbox takes the connections of the hosts
# that resume it (an abstract Unix socket: the sandbox's own network
# namespace, no file); the host reaches it through RELAY, run with exec.
SOCKET = "\0mcp-runtime"
# EXIT_IDLE is the exit status of a persistent sandbox that ended itself
# after its idle timeout without a call.
EXIT_IDLE = 75


class Host:
    """One host's connection: the container's attached streams (the host
    that started the sandbox) or a relay's socket (one that resumed it).
    setup holds its egress and site frames until it drives the sandbox."""

    def __init__(self, in_fd, out_fd, name):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.name = name
        self.setup = []


class Runtime:
    """The runtime of one sandbox: its parts, its streams and its calls.

    call is the call in flight (None between calls); it becomes current on
    the reader thread when its exec frame arrives and ends on the main
    thread, under state_lock.
    """

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self.call = None
        self.state_lock = threading.Lock()
        self.inbox = queue.SimpleQueue()
        # persist is set by the host's persist frame: the sandbox outlives
        # its first host's streams and serves SOCKET; idle_s (0: never) is
        # how long it waits for a call before it ends itself; last_call is
        # when the last call ended (or the sandbox started).
        self.persist = False
        self.idle_s = 0
        self.last_call = time.time()
        out_r, err_r = self.setup_descriptors()
        self.main = Host(self.in_fd, self.chan.fd, "main")
        self.driver = self.main
        current = lambda: self.call
        self.reaper = reaper.Reaper(sandbox)
        self.executor = executor.Executor(self.chan, self.reaper, current, runtime_files())
        self.display = display.Display(self.chan, current, self.executor)
        self.rpc = rpc.RPC(self.chan)
        self.progress = rpc.Progress(self.chan, current)
        self.egress = egress.Egress(self.chan)
        self.display.start_pumps(out_r, err_r)
        self.restore_stdio()

    # ------------------------------------------------------------ setup

    def setup_descriptors(self):
        """Moves the protocol to private descriptors and makes the pipes of
        the user's output; returns the pipes' read ends (stdout, stderr).
        restore_stdio then points fds 0-2 elsewhere."""
        self.in_fd = os.dup(0)
        out_fd = os.dup(1)
        diag_fd = os.dup(2)
        channel.set_diag_fd(diag_fd)
        self.null_fd = os.open(os.devnull, os.O_RDONLY)
        out_r, self.out_w = os.pipe()
        err_r, self.err_w = os.pipe()
        for fd in (self.in_fd, out_fd, diag_fd, self.null_fd, out_r, err_r, self.out_w, self.err_w):
            os.set_inheritable(fd, False)
        self.std_ids = {0: file_id(self.null_fd), 1: file_id(self.out_w), 2: file_id(self.err_w)}
        self.chan = channel.Channel(out_fd)
        return out_r, err_r

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
        """Reads the first host's frames; runs on its own thread. When
        they end, so does the runtime, unless it persists."""
        # handle is looked up for each frame, so that a profiler can wrap it.
        channel.read_frames(self.in_fd, lambda msg: self.handle(msg, self.main), self.egress.flush)
        if self.persist:
            self.gone(self.main)
        else:
            self.inbox.put(None)

    def handle(self, msg, host=None):
        """Acts on one frame from host (a dict); host is None in tests of
        one host."""
        t = msg.get("t")
        if t == "exec":
            # Whether host drives the sandbox is decided under the lock
            # that admits the call: another host may take it over between
            # a check here and the admission.
            self.admit(msg, host)
            return
        if host is not None and host is not self.driver:
            self.handle_other(msg, host)
            return
        if t == "sync":
            # The host lost the streams and attached again: where this
            # answer is read, its frames are whole again.
            n = msg.get("n")
            if isinstance(n, str):
                self.chan.send({"t": "synced", "n": n})
        elif t == "persist":
            self.start_persisting(msg)
        elif t == "interrupt":
            with self.state_lock:
                if host is not None and host is not self.driver:
                    return  # another host took over: its call ids are its own
                call = self.call
                if call is None or call.id != msg.get("id") or call.interrupted:
                    return
                call.interrupted = True
            self.executor.request_interrupt(call)
        elif t == "rpc_result":
            self.rpc.resolve(msg)
        elif t in ("net_data", "net_ack", "net_close"):
            self.egress.handle(msg)
        elif t == "egress":
            self.egress.start(msg.get("ca"))
        elif t == "site":
            add_site_dirs(msg.get("dirs"))
        else:
            channel.log("ignoring a frame of unknown type %r" % (t,))

    def handle_other(self, msg, host):
        """Acts on a frame of a host that does not drive the sandbox: its
        exec takes the sandbox over when no call runs, else is answered
        busy; its egress and site frames wait for that; the rest is
        dropped (it belongs to a call that is not its own)."""
        if msg.get("t") in ("egress", "site"):
            host.setup.append(msg)

    def take_over(self, host):
        """Makes host the sandbox's driver (state_lock held, no call
        running): its frames go to it, and the egress connections of the
        previous one are closed."""
        channel.log("host %s takes the sandbox over" % host.name)
        self.driver = host
        self.egress.reset()
        self.chan.retarget(host.out_fd)
        setup, host.setup = host.setup, []
        for m in setup:
            if m.get("t") == "egress":
                self.egress.start(m.get("ca"))
            else:
                add_site_dirs(m.get("dirs"))

    def gone(self, host):
        """A host's connection ended: if it drove the sandbox, frames go
        nowhere until another takes it over, and its call, whose caller is
        gone, is interrupted."""
        with self.state_lock:
            if host is not self.driver:
                return
            self.driver = None
            self.chan.retarget(None)
            call = self.call
            if call is not None and not call.interrupted:
                call.interrupted = True
            else:
                call = None
        channel.log("host %s is gone" % host.name)
        if call is not None:
            self.executor.request_interrupt(call)

    # ------------------------------------------------------------ persist

    def start_persisting(self, msg):
        """Makes the sandbox outlive its first host's streams, serve the
        hosts that resume it on SOCKET and end itself after idle_ms
        without a call (0: never)."""
        idle = msg.get("idle_ms")
        if not isinstance(idle, int) or isinstance(idle, bool) or idle < 0:
            channel.log("ignoring a persist frame without a non-negative idle_ms")
            return
        self.idle_s = idle / 1000.0
        if self.persist:
            return
        try:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(self.socket_name())
            listener.listen(8)
        except OSError as e:
            channel.log("listening for hosts: %s" % e)
            return
        self.persist = True
        threading.Thread(target=self.accept_hosts, args=(listener,), name="mcp-hosts", daemon=True).start()
        threading.Thread(target=self.idle_watch, name="mcp-idle", daemon=True).start()

    def socket_name(self):
        """SOCKET in a sandbox (its own network namespace); on a host (tests)
        one of this process's own."""
        return SOCKET if self.sandbox else "%s-%d" % (SOCKET, os.getpid())

    def accept_hosts(self, listener):
        n = 0
        while True:
            try:
                sock, _ = listener.accept()
            except OSError as e:
                channel.log("accepting a host: %s" % e)
                time.sleep(0.1)
                continue
            n += 1
            threading.Thread(target=self.serve_host, args=(sock, "relay-%d" % n), daemon=True).start()

    def serve_host(self, sock, name):
        """Serves one resuming host: its ready frame, then its frames. While
        it is connected, the reaper spares the relay at its other end."""
        fd = sock.fileno()
        host = Host(fd, fd, name)
        with self.state_lock:
            self.reaper.relays += 1
        try:
            self.chan.send_to(fd, self.ready_frame())
            channel.read_frames(fd, lambda msg: self.handle(msg, host), self.egress.flush)
        except OSError:
            pass
        self.gone(host)
        with self.state_lock:
            self.reaper.relays -= 1
        sock.close()

    def idle_watch(self):
        """Ends the runtime once it has waited idle_s for a call."""
        while True:
            time.sleep(1)
            with self.state_lock:
                idle = self.call is None and self.idle_s > 0 and time.time() - self.last_call > self.idle_s
            if idle:
                channel.log("no call for %gs; ending the sandbox" % self.idle_s)
                os._exit(EXIT_IDLE)

    def ready_frame(self):
        return {
            "t": "ready",
            "protocol": PROTOCOL,
            "runtime": RUNTIME_VERSION,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "pid": os.getpid(),
            "boot": globals().get("__mcp_boot__", 0.0),
            "sent": time.time(),
            "last_call": self.last_call,
        }

    def admit(self, msg, host=None):
        """Makes an exec frame's call current and queues it for the main
        thread, or answers it with a ProtocolError result; an exec of a
        host that does not drive the sandbox (host, when set and not the
        driver) takes it over if no call runs, else is answered busy. Both
        are decided under state_lock, and every answer goes to host's own
        connection (None: the one host of a test), never to the driver's.

        The call becomes current here, on the reader, so an exec or an
        interrupt read right after it (even in the same chunk) sees it.
        """
        problem, call = None, None
        limits = {}
        for key, default in (
            ("max_output", 0),
            ("max_images", executor.DEFAULT_MAX_IMAGES),
            ("max_image_bytes", executor.DEFAULT_MAX_IMAGE_BYTES),
        ):
            value = msg.get(key)
            if value is None:
                value = default
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problem = "%s must be a non-negative integer" % key
            limits[key] = value
        if not isinstance(msg.get("code"), str):
            problem = "exec frame without a string code"
        busy = False
        with self.state_lock:
            other = host is not None and host is not self.driver
            if problem is None and self.call is not None:
                busy = other
                problem = "a call is already running"
            if problem is None and other:
                self.take_over(host)
            if problem is None:
                call = self.call = executor.Call(
                    str(msg.get("id")),
                    limits["max_output"],
                    msg.get("progress") is True,
                    limits["max_images"],
                    limits["max_image_bytes"],
                )
        if busy:
            self.chan.send_to(host.out_fd, {"t": "busy", "id": str(msg.get("id"))})
            return
        if problem is not None:
            send = self.chan.send if host is None else lambda f: self.chan.send_to(host.out_fd, f)
            send(
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

    # ------------------------------------------------------------ calls

    def serve(self):
        """Sends `ready` and runs the calls as they come, until the host's
        input ends."""
        threading.Thread(target=self.reader, name="mcp-reader", daemon=True).start()
        threading.Thread(target=self.executor.interrupter, name="mcp-interrupt", daemon=True).start()
        threading.Thread(target=self.progress.sender, name="mcp-progress", daemon=True).start()
        self.chan.send(self.ready_frame())
        while True:
            item = self.inbox.get()
            if item is None:
                return
            self.run_call(*item)

    def run_call(self, call, code):
        """Runs a call's code and sends what it produced, then its result."""
        ex = self.executor
        # The previous call ended with every descriptor checked; between
        # calls only its threads could have moved them, so the Python
        # objects are checked here and the descriptors at the end.
        self.restore_stdio(descriptors=False)
        ex.install_sigint()
        result = {"t": "result", "id": call.id}
        if self.persist:
            outputs.prune_kept()
        self.display.watch.start()
        start = time.perf_counter()
        try:
            result.update(ex.execute(code, call.id))
        except BaseException as e:  # anything the guarded section let through
            ex.interruptible = False
            result.update(ex.describe(e, "interrupted" if isinstance(e, KeyboardInterrupt) else "error"))
        ex.interruptible = False
        sys.settrace(None)
        if result["status"] != "interrupted":
            self.display.show_figures(call)
        result["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # user code may have put anything there
                pass
        result["killed"] = self.reaper.kill_leftovers()
        files, more = self.display.watch.changes()
        if files:
            result["files"] = files
            self.display.send_files(call, files)
        if more:
            call.dropped["files"] = more
        self.rpc.fail_pending()
        self.restore_stdio()
        self.chan.hold()
        try:
            self.display.sync_output()
            self.progress.flush(call)
            result["dropped"] = dict(call.dropped)
            with self.state_lock:
                self.call = None
                self.last_call = time.time()
            call.ended.set()
            self.chan.send(result)
        finally:
            self.chan.release()


def runtime_files():
    """The source files of the runtime's own code (one function of each
    module names it), whose frames tracebacks of user code leave out.
    mcp_sandbox_outputs' frames stay: they tell what display() rejected."""
    return {
        f.__code__.co_filename
        for f in (
            channel.log,
            reaper.Reaper.reap,
            executor.exit_code,
            display.Display.display,
            rpc.RPC.rpc_sync,
            main,
        )
    }


def in_container():
    """Reports whether this process runs in a container: a Docker or Podman
    one, or any whose PID namespace it heads (a Kubernetes pod, where no
    init is added: the runtime is PID 1, and reaps its orphans itself)."""
    return os.getpid() == 1 or os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")


def file_id(fd):
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def add_site_dirs(dirs):
    """Adds the host's package directories to the import path, as
    site.addsitedir does (their .pth files are processed)."""
    if not isinstance(dirs, list):
        channel.log("ignoring a site frame without a list of directories")
        return
    for d in dirs:
        if isinstance(d, str) and d.startswith("/"):
            site.addsitedir(d)
        else:
            channel.log("ignoring the package directory %r" % (d,))


def main():
    # kill(-1) is only safe in the sandbox's own PID namespace: never as
    # root, never outside a container.
    sandbox = "sandbox" in sys.argv[1:] and os.getuid() != 0 and in_container()
    if sandbox:
        # A pod's kubelet adds the API server's service address to every
        # environment; the code needs none of it (and cannot reach it).
        for k in [k for k in os.environ if k.startswith("KUBERNETES_")]:
            del os.environ[k]
    # A pod has no rlimits: the bridge names those to lower to.
    limits.lower_from_environ()
    rt = Runtime(sandbox)
    module = types.ModuleType("mcp_sandbox_runtime")
    module.rpc = rt.rpc.rpc
    module.rpc_sync = rt.rpc.rpc_sync
    module.report_progress = rt.progress.report_progress
    module.install_endpoint = rt.egress.install_endpoint
    module.display = rt.display.display
    builtins.display = rt.display.display
    outputs.install_backend()
    module.RPCError = rpc.RPCError
    module.PROTOCOL = PROTOCOL
    sys.modules["mcp_sandbox_runtime"] = module
    signal.signal(signal.SIGINT, rt.executor.on_sigint)
    try:
        rt.serve()
    finally:
        os._exit(0)


if __name__ in ("__main__", "__mcp_runtime__"):
    main()
