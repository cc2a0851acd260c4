"""The relay for other bridges, the sandbox's side (mcp_sandbox_relay).

A persistent sandbox outlives the streams of the host that started it and
serves the hosts that resume it: each reaches SOCKET through a relay the
host runs in the sandbox with the engine's exec (relaySource in
entrypoint/resume.go) and speaks the frame protocol on its connection.
The sandbox ends itself when no call came for its idle timeout
(PROTOCOL.md, Persistent sandboxes).
"""

import os
import socket
import threading
import time

import mcp_sandbox_channel as channel

# SOCKET is where a persistent sandbox takes the connections of the hosts
# that resume it (an abstract Unix socket: the sandbox's own network
# namespace, no file).
SOCKET = "\0mcp-runtime"
# EXIT_IDLE is the exit status of a persistent sandbox that ended itself
# after its idle timeout without a call.
EXIT_IDLE = 75
# FROZEN_S is how late the idle watcher's one-second tick must come for
# the watcher to take the sandbox for one that was asleep (a tick that a
# loaded machine delays as much only makes it wait a little longer).
FROZEN_S = 2


class Host:
    """One host's connection: the container's attached streams (the host
    that started the sandbox) or a relay's socket (one that resumed it).
    setup holds its egress and site frames until it drives the sandbox."""

    def __init__(self, in_fd, out_fd, name):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.name = name
        self.setup = []


class Relay:
    """The persistence of one sandbox and the hosts that resume it.

    persist is set by the host's persist frame: the sandbox outlives its
    first host's streams and serves SOCKET; idle_s (0: never) is how long
    it waits for a call before it ends itself. Which host drives the
    sandbox is admission's; the relay serves each host's connection: its
    ready frame (ready_frame()), then its frames, each given to
    handle(msg, host), and, when it ends, interrupt(call) for the call of
    a host that drove the sandbox.
    """

    def __init__(self, sandbox, admission, chan, reaper, ready_frame, handle, interrupt, flush):
        self.sandbox = sandbox
        self.admission = admission
        self.chan = chan
        self.reaper = reaper
        self.ready_frame = ready_frame
        self.handle = handle
        self.interrupt = interrupt
        self.flush = flush
        self.persist = False
        self.idle_s = 0

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
        """Serves each host that connects to listener on a thread of its own."""
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
        with self.admission.lock:
            self.reaper.relays += 1
        try:
            self.chan.send_to(fd, self.ready_frame())
            channel.read_frames(fd, lambda msg: self.handle(msg, host), self.flush)
        except OSError:
            pass
        self.gone(host)
        with self.admission.lock:
            self.reaper.relays -= 1
        sock.close()

    def gone(self, host):
        """A host's connection ended: if it drove the sandbox, frames go
        nowhere until another takes it over, and its call, whose caller is
        gone, is interrupted."""
        call = self.admission.leave(host)
        if call is not None:
            self.interrupt(call)

    def idle_watch(self):
        """Ends the runtime once it has waited idle_s for a call. A tick
        that comes FROZEN_S late or more means the sandbox was asleep
        (checkpointed, then restored): its clocks jumped by the sleep,
        which does not count as idle time, so the wait starts again."""
        last = time.time()
        while True:
            time.sleep(1)
            now = time.time()
            if now - last >= FROZEN_S:
                channel.log("woken after %.0fs asleep; the idle time starts again" % (now - last))
                self.admission.touch()
            last = now
            if self.admission.idle(self.idle_s):
                channel.log("no call for %gs; ending the sandbox" % self.idle_s)
                os._exit(EXIT_IDLE)
