"""The sandbox runtime of mcp-server-code-execution-mode (protocol 7).

It runs inside the sandbox container as one long-lived interpreter and
executes the host's code requests in persistent globals. See PROTOCOL.md
in entrypoint/ for the contract with the host. Standard library only;
CPython 3.10 to 3.14.

This is the main program; the host ships the runtime's other modules
with it (see runtimeProgram in entrypoint.go), each of one concern:

    mcp_sandbox_outputs    images, the matplotlib backend, the files-out watch
    mcp_sandbox_channel    frames to and from the host, diagnostics
    mcp_sandbox_reaper     killing the processes a call leaves behind
    mcp_sandbox_limits     lowering its own rlimits where the engine sets none
    mcp_sandbox_executor   the call in flight: running its code, interrupts
    mcp_sandbox_display    sending a call's output, images, figures, files
    mcp_sandbox_rpc        RPCs and progress reports of user code
    mcp_sandbox_egress     the proxy endpoint whose connections the host carries
    mcp_sandbox_stdio      the standard streams: the protocol's and the user's
    mcp_sandbox_admission  which host drives the sandbox, which call is current
    mcp_sandbox_relay      persistence, and the hosts that resume the sandbox
    mcp_sandbox_lane       the fast lane: the first host's frames on a socket of its own
    mcp_sandbox_dispatch   each host frame to the part that acts on it

The Runtime here composes them and is the call loop: it serves the first
host's frames and takes each call from its start to its result.
"""

import builtins
import os
import signal
import sys
import threading
import time
import types

import mcp_sandbox_admission as admission
import mcp_sandbox_channel as channel
import mcp_sandbox_dispatch as dispatch
import mcp_sandbox_display as display
import mcp_sandbox_egress as egress
import mcp_sandbox_executor as executor
import mcp_sandbox_lane as lane
import mcp_sandbox_limits as limits
import mcp_sandbox_outputs as outputs
import mcp_sandbox_reaper as reaper
import mcp_sandbox_relay as relay
import mcp_sandbox_rpc as rpc
import mcp_sandbox_stdio as stdio

PROTOCOL = 7
RUNTIME_VERSION = "1.1"


class Runtime:
    """The runtime of one sandbox: its parts and its calls.

    Frames of every host go through handle (looked up for each frame, so
    that a profiler can wrap it); the calls admission admits run on the
    main thread, in serve, one at a time.
    """

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self.stdio = stdio.Stdio()
        self.chan = channel.Channel(self.stdio.out_fd)
        self.main = relay.Host(self.stdio.in_fd, self.chan.fd, "main")
        self.egress = egress.Egress(self.chan)
        self.admission = admission.Admission(self.chan, self.egress, self.main, dispatch.add_site_dirs)
        current = self.admission.current
        self.reaper = reaper.Reaper(sandbox)
        self.executor = executor.Executor(self.chan, self.reaper, current, runtime_files())
        self.display = display.Display(self.chan, current, self.executor)
        self.rpc = rpc.RPC(self.chan)
        self.progress = rpc.Progress(self.chan, current)
        self.relay = relay.Relay(
            sandbox,
            self.admission,
            self.chan,
            self.reaper,
            self.ready_frame,
            lambda msg, host: self.handle(msg, host),
            self.executor.request_interrupt,
            self.egress.flush,
        )
        self.lane = lane.Lane(
            self.chan,
            self.main,
            self.stdio.out_fd,
            sandbox,
            lambda msg, host: self.handle(msg, host),
            self.egress.flush,
        )
        self.egress.handoff = self.lane.hand_off
        self.dispatch = dispatch.Dispatch(
            self.admission, self.relay, self.chan, self.executor, self.rpc, self.egress, self.lane, lane.Reads(self.chan)
        )
        self.display.start_pumps(self.stdio.out_r, self.stdio.err_r)
        self.stdio.restore()

    def handle(self, msg, host=None):
        """Acts on one frame from host (a dict); host is None in tests of
        one host."""
        self.dispatch.handle(msg, host)

    def reader(self):
        """Reads the first host's frames; runs on its own thread. When
        they end, so does the runtime, unless it persists."""
        channel.read_frames(self.stdio.in_fd, lambda msg: self.handle(msg, self.main), self.egress.flush)
        if self.relay.persist:
            self.relay.gone(self.main)
        else:
            self.admission.inbox.put(None)

    def ready_frame(self):
        return {
            "t": "ready",
            "protocol": PROTOCOL,
            "runtime": RUNTIME_VERSION,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "pid": os.getpid(),
            "boot": globals().get("__mcp_boot__", 0.0),
            "sent": time.time(),
            "last_call": self.admission.last_call,
        }

    # ------------------------------------------------------------ calls

    def serve(self):
        """Sends `ready` and runs the calls as they come, until the host's
        input ends."""
        threading.Thread(target=self.reader, name="mcp-reader", daemon=True).start()
        threading.Thread(target=self.executor.interrupter, name="mcp-interrupt", daemon=True).start()
        threading.Thread(target=self.progress.sender, name="mcp-progress", daemon=True).start()
        self.chan.send(self.ready_frame())
        while True:
            item = self.admission.inbox.get()
            if item is None:
                return
            self.run_call(*item)

    def run_call(self, call, code):
        """Runs a call's code and sends what it produced, then its result."""
        ex = self.executor
        # The previous call ended with every descriptor checked; between
        # calls only its threads could have moved them, so the Python
        # objects are checked here and the descriptors at the end.
        self.stdio.restore(descriptors=False)
        ex.install_sigint()
        result = {"t": "result", "id": call.id}
        if self.relay.persist:
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
        self.stdio.restore()
        self.chan.hold()
        try:
            self.display.sync_output()
            self.progress.flush(call)
            result["dropped"] = dict(call.dropped)
            self.admission.end()
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
            stdio.Stdio.restore,
            admission.Admission.admit,
            relay.Relay.serve_host,
            lane.Lane.write,
            dispatch.Dispatch.handle,
            main,
        )
    }


def in_container():
    """Reports whether this process runs in a container: a Docker or Podman
    one, or any whose PID namespace it heads (a Kubernetes pod, where no
    init is added: the runtime is PID 1, and reaps its orphans itself)."""
    return os.getpid() == 1 or os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")


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
