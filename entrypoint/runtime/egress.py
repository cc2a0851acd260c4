"""The sandbox end of the egress gateway: a proxy endpoint on loopback.

Installed in the sandbox as the module `mcp_sandbox_egress`. When the host
sends an `egress` frame, the runtime listens on 127.0.0.1 (an ephemeral
port), points the proxy variables of its environment (which user code
shares) at it and, given a CA, writes a bundle of the system roots and
that CA for the usual TLS variables. Each connection user code opens to
the endpoint is carried to the host as `net_open`, `net_data` and
`net_close` frames, with credit-based flow control (`net_ack`) both ways:
nothing here ever buffers more than DOWN_WINDOW bytes per connection, nor
the host more than UP_WINDOW. See PROTOCOL.md. Standard library only.

One thread, a selector loop, owns the listener: it accepts, reads the
sockets and writes what is queued for them, without blocking. The
runtime's reader thread records what the host's frames say (bytes, credit,
a close) under a lock; after each batch of frames read together it writes
the bytes to their sockets itself, as far as they take them without
blocking (a download skips a hand-over between threads, a reply in several
frames arrives in one piece), and wakes the loop for the rest. Every write
of a connection's bytes happens under the lock. So a connection whose user
code does not read, or a flood of them, never holds up calls, interrupts
or RPCs.

No connection is left waiting for a place: past MAX_CONNS it is closed
as soon as it is accepted, and so is one that finds every descriptor
taken (user code's sockets count against the same RLIMIT_NOFILE): the
loop keeps a spare descriptor, which it frees for a moment to accept such
a connection and close it, rather than leave it in the listener's backlog,
unanswered, until a descriptor frees.
"""

import errno
import os
import selectors
import socket
import ssl
import threading
import time

import mcp_sandbox_channel as channel

# DOWN_WINDOW bounds the host's bytes of a connection received here and
# not yet acknowledged (this side's buffer, in the sandbox's memory);
# UP_WINDOW bounds the bytes sent to the host and not yet acknowledged
# (the host's buffer, kept small: the bridge holds one per connection of
# every sandbox).
DOWN_WINDOW = 1 << 20
UP_WINDOW = 256 << 10
# CHUNK bounds the bytes of one net_data frame.
CHUNK = 64 << 10
# ACK_BATCH is how many delivered bytes make a net_ack before the
# connection's queue empties.
ACK_BATCH = 64 << 10
# MAX_CONNS bounds the connections open at once; further ones are closed
# as soon as they are accepted.
MAX_CONNS = 256
# ACCEPT_PAUSE is how long the loop pauses after a failed accept it cannot
# act on (seconds).
ACCEPT_PAUSE = 0.05
# BUNDLE is where the CA bundle goes when the host sends a CA.
BUNDLE_DIR = "/tmp/mcp-egress"
BUNDLE = BUNDLE_DIR + "/ca-bundle.pem"
# SYSTEM_ROOTS are where images keep their CA roots (Debian and Ubuntu,
# RHEL and Fedora, Alpine and macOS, SUSE).
SYSTEM_ROOTS = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
CA_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE")


class Conn:
    """One connection user code opened to the endpoint.

    credit is what may still go to the host before it acknowledges; out
    holds the host's bytes not yet written to the socket, delivered those
    written and not yet acknowledged. host_closed says the host sent
    net_close: the socket closes once out is written. silent says it ends
    without a net_close: its host is no longer the sandbox's.
    """

    __slots__ = ("cid", "sock", "credit", "out", "delivered", "host_closed", "broken", "silent", "events")

    def __init__(self, cid, sock):
        self.cid = cid
        self.sock = sock
        self.credit = UP_WINDOW
        self.out = bytearray()
        self.delivered = 0
        self.host_closed = False
        self.broken = False
        self.silent = False
        self.events = 0


class Egress:
    """The proxy endpoint and its connections; frames go over chan."""

    def __init__(self, chan):
        self.chan = chan
        self.lock = threading.Lock()
        self.conns = {}
        self.dirty = set()  # connections whose registration may change
        self.pending = set()  # connections with bytes queued by handle
        self.woken = False  # handle saw news for the loop
        self.next_cid = 0
        self.listener = None
        self.install_listener = None  # the endpoint of installs (install_endpoint)
        self.port = None
        self.sel = None
        self.wake_r = self.wake_w = None
        self.spare = None  # the spare descriptor (see shed) and its identity
        # handoff(sock, install), when set, hands a connection to the host
        # instead of relaying it (mcp_sandbox_lane); False: relay it.
        self.handoff = None

    # ------------------------------------------------------------ start

    def start(self, ca):
        """Listens, sets the environment and starts the loop thread; a
        second egress frame is ignored."""
        if self.listener is not None:
            # Another bridge took the sandbox over: trust its CA instead.
            self.trust(ca)
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        listener.setblocking(False)
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.keep_spare()
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, None)
        # A second endpoint, whose connections the host hands to its
        # install side (package indexes only): pip of runtime.install uses
        # it, user code's proxy variables never name it.
        install = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        install.bind(("127.0.0.1", 0))
        install.listen(16)
        install.setblocking(False)
        self.sel.register(install, selectors.EVENT_READ, None)
        self.install_listener = install
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        self.listener = listener
        self.port = listener.getsockname()[1]
        set_proxy_env(self.port)
        self.trust(ca)
        threading.Thread(target=self.loop, name="mcp-egress", daemon=True).start()

    def trust(self, ca):
        """Makes the sandbox's clients trust ca (PEM) besides the system
        roots."""
        if not isinstance(ca, str) or not ca.strip():
            return
        try:
            path = write_bundle(ca)
        except OSError as e:
            channel.log("writing the egress CA bundle: %s" % e)
        else:
            for var in CA_VARS:
                os.environ[var] = path

    def reset(self):
        """Closes every connection without telling the host: the host
        that carried them is no longer the sandbox's (another took it
        over), and the new one never knew them. The loop closes them."""
        with self.lock:
            for conn in self.conns.values():
                conn.broken = conn.silent = True
                self.dirty.add(conn.cid)
            self.pending.clear()
        if self.listener is not None:
            self.wake()

    # ------------------------------------------------ host frames (reader)

    def handle(self, msg):
        """Records a net_data, net_ack or net_close frame of the host; runs
        on the runtime's reader thread and never blocks on a socket.

        The host's bytes are queued; flush, called once the frames read
        together are handled, writes them.
        """
        t, cid = msg.get("t"), msg.get("cid")
        if not isinstance(cid, int) or isinstance(cid, bool):
            channel.log("ignoring a %s frame without an integer cid" % t)
            return
        data = msg.get("payload", b"")
        if t == "net_data" and not data:
            channel.log("ignoring a net_data frame without a payload")
            return
        n = msg.get("n")
        with self.lock:
            conn = self.conns.get(cid)
            if conn is None:
                return  # closed here; the host's frame crossed our net_close
            if t == "net_data":
                if conn.host_closed or len(conn.out) + conn.delivered + len(data) > DOWN_WINDOW:
                    channel.log("connection %d: the host sent past its credit; closing it" % cid)
                    conn.broken = True
                else:
                    conn.out += data
                    self.pending.add(cid)
                    return
            elif t == "net_ack":
                if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or conn.credit + n > UP_WINDOW:
                    channel.log("connection %d: a bad net_ack; closing it" % cid)
                    conn.broken = True
                else:
                    conn.credit += n
            elif t == "net_close":
                conn.host_closed = True
            self.dirty.add(cid)
            self.woken = True

    def flush(self):
        """Writes the bytes the frames just handled queued, as far as each
        socket takes them without blocking, and wakes the loop for the rest
        and for the frames' other news; runs on the reader thread after
        each batch of frames read together, so that a reply that came in
        several frames reaches user code in one piece. A download skips a
        hand-over between threads this way."""
        with self.lock:
            pending, self.pending = self.pending, set()
            wake, self.woken = self.woken, False
        for cid in pending:
            with self.lock:
                conn = self.conns.get(cid)
                if conn is None:
                    continue
                ack = self.send_out(conn)
                if conn.out or conn.broken:
                    self.dirty.add(cid)
                    wake = True
            self.ack(conn, ack)
        if wake:
            self.wake()

    def send_out(self, conn):
        """Writes what conn.out holds to its socket without blocking and
        returns the bytes now due for a net_ack (0: none yet). self.lock is
        held: every write of a connection's bytes happens under it, so
        that the two threads never send the same bytes."""
        if not conn.out or conn.broken:
            return 0
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            conn.broken = True
            return 0
        del conn.out[:sent]
        conn.delivered += sent
        if conn.delivered >= ACK_BATCH or (not conn.out and conn.delivered):
            ack, conn.delivered = conn.delivered, 0
            return ack
        return 0

    def ack(self, conn, n):
        """Acknowledges n delivered bytes of conn to the host, unless it
        closed the connection (it wants no net_ack after its net_close) or
        this side did: the check and the send hold the lock, as finish's
        net_close does, so that no net_ack follows it."""
        if not n:
            return
        with self.lock:
            if not conn.host_closed and conn.cid in self.conns:
                self.chan.send({"t": "net_ack", "cid": conn.cid, "n": n})

    def wake(self):
        """Wakes the loop thread; never blocks."""
        try:
            self.wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # a wake-up is pending already

    # ------------------------------------------------------------ loop

    def loop(self):
        """Serves the listener and the connections; runs on its own thread."""
        while True:
            try:
                self.refresh()
                for key, events in self.sel.select():
                    if key.fileobj is self.listener:
                        self.accept(self.listener, False)
                    elif key.fileobj is self.install_listener:
                        self.accept(self.install_listener, True)
                    elif key.fileobj is self.wake_r:
                        drain(self.wake_r)
                    else:
                        conn = key.data
                        if events & selectors.EVENT_WRITE:
                            self.write(conn)
                        if events & selectors.EVENT_READ and conn.cid in self.conns:
                            self.read(conn)
            except Exception as e:  # keep serving: one bad socket must not end egress
                channel.log("egress loop: %r" % (e,))

    def refresh(self):
        """Updates the registration of the connections whose state changed,
        and takes a spare descriptor again if shed could not."""
        if self.spare is None:
            self.keep_spare()
        with self.lock:
            dirty, self.dirty = self.dirty, set()
            conns = [self.conns[cid] for cid in dirty if cid in self.conns]
        for conn in conns:
            with self.lock:
                broken = conn.broken
                done = conn.host_closed and not conn.out
                want = 0
                if conn.out:
                    want |= selectors.EVENT_WRITE
                if conn.credit > 0 or conn.host_closed:
                    want |= selectors.EVENT_READ
            if broken or done:
                self.finish(conn)
                continue
            if want != conn.events:
                if conn.events and want:
                    self.sel.modify(conn.sock, want, conn)
                elif want:
                    self.sel.register(conn.sock, want, conn)
                else:
                    self.sel.unregister(conn.sock)
                conn.events = want

    def install_endpoint(self):
        """The proxy URL of the install endpoint; RuntimeError when the
        host gave the sandbox no egress."""
        if self.install_listener is None:
            raise RuntimeError("this sandbox has no egress gateway, through which packages are installed")
        return "http://127.0.0.1:%d" % self.install_listener.getsockname()[1]

    def accept(self, listener, install):
        """Accepts the connections waiting on listener (a few at a time),
        each within MAX_CONNS announced with net_open (saying install for
        the install endpoint's), the others closed at once; when no
        descriptor is free, shed closes those waiting."""
        for _ in range(64):
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE) and self.shed(listener):
                    return
                # The listener stays readable, so the loop pauses instead
                # of spinning on it.
                channel.log("accepting an egress connection: %s" % e)
                time.sleep(ACCEPT_PAUSE)
                return
            if self.handoff is not None and self.handoff(sock, install):
                sock.close()  # the host holds the connection now
                continue
            with self.lock:
                full = len(self.conns) >= MAX_CONNS
                if not full:
                    self.next_cid += 1
                    conn = Conn(self.next_cid, sock)
                    self.conns[conn.cid] = conn
                    self.dirty.add(conn.cid)
            if full:
                sock.close()
                continue
            sock.setblocking(False)
            frame = {"t": "net_open", "cid": conn.cid}
            if install:
                frame["install"] = True
            self.chan.send(frame)

    def shed(self, listener):
        """Closes the connections waiting in listener's backlog, none of
        which has a descriptor to be accepted into: the spare one is freed
        to accept each and close it at once, then taken again. Returns
        False when it could not (no spare, or another thread took the
        descriptor freed); the spare is taken again later (refresh)."""
        if self.spare is None:
            return False
        fd, ident = self.spare
        self.spare = None
        try:
            if file_id(fd) != ident:
                return False  # user code closed it: the number is not ours
            os.close(fd)
        except OSError:
            return False
        shed = 0
        try:
            for _ in range(1024):  # the rest, if any, at the loop's next turn
                try:
                    sock, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    return False
                sock.close()
                shed += 1
            return True
        finally:
            self.keep_spare()
            if shed:
                channel.log("closed %d egress connection(s) at once: every descriptor is taken" % shed)

    def keep_spare(self):
        """Takes a spare descriptor, a duplicate of the wake-up socket's,
        for shed; none while every descriptor is taken."""
        try:
            fd = os.dup(self.wake_r.fileno())
        except OSError:
            return
        self.spare = (fd, file_id(fd))

    def read(self, conn):
        """Reads what user code wrote and sends it, within the credit."""
        with self.lock:
            n = CHUNK if conn.host_closed else min(CHUNK, conn.credit)
        if n <= 0:
            return
        try:
            data = conn.sock.recv(n)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.finish(conn)
            return
        with self.lock:
            if conn.host_closed:
                return  # the host is gone: the bytes have nowhere to go
            conn.credit -= len(data)
            self.dirty.add(conn.cid)
        self.chan.send_data({"t": "net_data", "cid": conn.cid}, data)

    def write(self, conn):
        """Writes the host's bytes to the socket and acknowledges them."""
        with self.lock:
            ack = self.send_out(conn)
            broken = conn.broken
            self.dirty.add(conn.cid)
        if broken:
            self.finish(conn)
            return
        self.ack(conn, ack)

    def finish(self, conn):
        """Closes a connection and tells the host, once."""
        with self.lock:
            if self.conns.pop(conn.cid, None) is None:
                return
            # Sent under the lock: a net_ack of the reader thread (see ack)
            # comes before it or not at all.
            if not conn.silent:
                self.chan.send({"t": "net_close", "cid": conn.cid})
        if conn.events:
            try:
                self.sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        conn.sock.close()


def file_id(fd):
    """The device and inode of descriptor fd."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def drain(sock):
    """Reads what a non-blocking socket holds, discarding it."""
    try:
        while sock.recv(4096):
            pass
    except (BlockingIOError, InterruptedError, OSError):
        pass


def set_proxy_env(port):
    """Points the proxy variables at the endpoint and removes NO_PROXY."""
    url = "http://127.0.0.1:%d" % port
    for var in PROXY_VARS:
        os.environ[var] = url
    for var in ("NO_PROXY", "no_proxy"):
        os.environ.pop(var, None)


def system_roots():
    """The PEM text of the image's CA roots, or "" when none is found."""
    paths = list(SYSTEM_ROOTS)
    try:
        verify = ssl.get_default_verify_paths()
        paths += [p for p in (verify.cafile, verify.openssl_cafile) if p]
    except Exception:  # an ssl module without them
        pass
    for path in paths:
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                return f.read()
        except OSError:
            continue
    return ""


def write_bundle(ca, path=BUNDLE):
    """Writes the system roots followed by ca to path (atomically);
    returns path."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    roots = system_roots()
    if roots and not roots.endswith("\n"):
        roots += "\n"
    if not ca.endswith("\n"):
        ca += "\n"
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="ascii", errors="replace") as f:
        f.write(roots + ca)
    os.replace(tmp, path)
    return path
