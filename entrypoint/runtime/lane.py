"""The fast lane of the sandbox runtime (mcp_sandbox_lane).

When the bridge gives a sandbox a lane (MCP_BRIDGE_FAST_LANE), it offers
it on the stream with a lane frame: the path of a Unix socket in a
directory mounted read-only for this sandbox alone, and a secret. The
runtime connects once, sends the secret and a newline, answers the
offer on the stream, and from then on the first host's frames travel the
socket both ways. If the socket breaks, the frames go back to the stream
after a report of the bytes each way, so that the host can tell whether
any were lost (PROTOCOL.md, The fast lane). Standard library only.
"""

import array
import errno
import json
import os
import socket
import stat
import string
import threading

import mcp_sandbox_channel as channel

# SOCKET is where a sandbox finds its lane (engine.LaneDir + "/sock").
SOCKET = "/run/mcp-lane/sock"
# TOKEN_HEX is the length of the lane's secret, hex-encoded.
TOKEN_HEX = 64
# OUT_DIR is where the files a host reads over the lane are.
OUT_DIR = "/workspace/out"
# READ_CHUNK is the most bytes one read_data frame carries.
READ_CHUNK = 1 << 20


class Lane:
    """The lane of the sandbox's first host (main): fd while in use.

    wrote and read count the bytes of the frames written to the lane and
    of the whole frames read from it. Once a write fails, breaking is set
    and frames wait in pending until the reader, at the lane's end,
    reports the break on the stream and sends them after the report.
    """

    def __init__(self, chan, main, stream_fd, sandbox, handle, flush):
        self.chan = chan
        self.main = main
        self.stream_fd = stream_fd
        self.sandbox = sandbox
        self.handle = handle
        self.flush = flush
        self.offered = False
        self.sock = None
        self.fd = None
        self.ino = None
        self.wrote = 0
        self.read = 0
        self.breaking = False
        self.pending = []

    def answer(self, ok, error=""):
        frame = {"t": "lane", "ok": ok}
        if error:
            frame["error"] = error
        self.chan.send_to(self.stream_fd, frame)

    def open(self, msg):
        """Acts on the host's offer: connects, authenticates, answers on
        the stream, and moves the first host's frames onto the lane."""
        if self.offered:
            channel.log("ignoring a second lane offer")
            return
        self.offered = True
        path, token = msg.get("path"), msg.get("token")
        if not isinstance(token, str) or len(token) != TOKEN_HEX or any(c not in string.hexdigits for c in token):
            self.answer(False, "the offer has no token")
            return
        if not isinstance(path, str) or (path != SOCKET if self.sandbox else not path.startswith("/")):
            self.answer(False, "the offer's path is not %s" % SOCKET)
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(5)
            sock.connect(path)
            sock.sendall((token + "\n").encode("ascii"))
            sock.settimeout(None)
        except OSError as e:
            sock.close()
            self.answer(False, "connecting to %s: %s" % (path, e))
            return
        fd = sock.fileno()
        os.set_inheritable(fd, False)
        ok = (json.dumps({"t": "lane", "ok": True}, separators=(",", ":")) + "\n").encode("ascii")
        with self.chan.lock:
            try:
                channel.write_all(self.stream_fd, ok)
            except OSError:
                sock.close()
                return
            self.sock, self.fd, self.ino = sock, fd, os.fstat(fd).st_ino
            self.main.out_fd = fd
            if self.chan.fd == self.stream_fd:
                self.chan.fd = fd
            self.chan.lane = self
        threading.Thread(target=self.reader, name="mcp-lane", daemon=True).start()

    def write(self, data):
        """Writes data to the lane, or keeps it once the lane broke; the
        caller holds the channel's lock."""
        if self.breaking:
            self.pending.append(data)
            return
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.fd, view)
                self.wrote += n
                view = view[n:]
        except OSError as e:
            channel.log("the lane broke writing: %s" % e)
            self.pending.append(data)
            self.broke()

    def broke(self):
        """Marks the lane broken (the caller holds the channel's lock):
        frames wait for the reader's fall back, which its shutdown brings."""
        self.breaking = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def hand_off(self, sock, install):
        """Hands sock, a connection of sandbox code to the egress endpoint,
        to the host over the lane (SCM_RIGHTS, with a net_fd frame): the
        host's gateway reads and writes it directly. False when the lane
        does not carry the frames now (a host that resumed the sandbox
        drives it, or the lane broke): the connection is relayed."""
        frame = {"t": "net_fd"}
        if install:
            frame["install"] = True
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("ascii")
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [sock.fileno()]))]
        with self.chan.lock:
            if self.chan.lane is not self or self.breaking or self.chan.fd != self.fd:
                return False
            try:
                n = self.sock.sendmsg([data], rights)
            except OSError as e:
                channel.log("the lane broke handing a connection over: %s" % e)
                self.broke()
                return False
            self.wrote += n
            if n < len(data):
                self.write(data[n:])
        return True

    def reader(self):
        """Reads the host's frames from the lane; at its end, falls back."""
        channel.read_frames(self.fd, lambda msg: self.handle(msg, self.main), self.flush, counter=self)
        self.fall_back()

    def fall_back(self):
        """Moves the first host's frames back to the stream: the report of
        the break with the bytes each way, then what waited."""
        with self.chan.lock:
            if self.chan.lane is not self:
                return
            self.chan.lane = None
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            report = {"t": "lane", "ok": False, "broke": True, "error": "the lane ended", "wrote": self.wrote, "read": self.read}
            self.main.out_fd = self.stream_fd
            if self.chan.fd == self.fd:
                self.chan.fd = self.stream_fd
            data = (json.dumps(report, separators=(",", ":")) + "\n").encode("ascii") + b"".join(self.pending)
            self.pending = []
            try:
                channel.write_all(self.stream_fd, data)
            except OSError as e:
                channel.log("reporting the lane's break: %s" % e)
        # Closed unless sandbox code closed its descriptor first (which
        # may now be another file of its own).
        try:
            mine = os.fstat(self.fd).st_ino == self.ino
        except OSError:
            mine = False
        if mine:
            self.sock.close()
        else:
            self.sock.detach()
        channel.log("the lane ended; frames travel the stream")


def open_under(root, path):
    """Opens path, a file under root, for reading without following a link
    at any of its components (ELOOP or ENOTDIR where one is)."""
    if not path.startswith(root + "/"):
        raise OSError(errno.EINVAL, "not a path under " + root)
    parts = path[len(root) + 1 :].split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise OSError(errno.EINVAL, "not a clean path")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for p in parts[:-1]:
            nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


class Reads:
    """Serves the host's reads of files out (read frames, over the lane):
    each on a thread of its own, its bytes raw in read_data frames, then
    read_end with the size, or with the errno's name and a message."""

    def __init__(self, chan, root=OUT_DIR):
        self.chan = chan
        self.root = root

    def serve(self, msg, host=None):
        """Starts serving a read frame of host (None: the driver's, in
        tests), which the answer goes to."""
        rid, path, limit = msg.get("id"), msg.get("path"), msg.get("max")
        if not isinstance(rid, str) or not isinstance(path, str) or not isinstance(limit, int) or isinstance(limit, bool):
            channel.log("ignoring a read frame without id, path and max")
            return
        threading.Thread(target=self.read, args=(rid, path, limit, host), name="mcp-read", daemon=True).start()

    def read(self, rid, path, limit, host=None):
        def send(frame, payload=None):
            try:
                if host is None:
                    if payload is None:
                        self.chan.send(frame)
                    else:
                        self.chan.send_data(frame, payload)
                elif payload is None:
                    self.chan.send_to(host.out_fd, frame)
                else:
                    self.chan.send_data_to(host.out_fd, frame, payload)
            except OSError as e:  # the host is gone
                raise ConnectionError(str(e))

        sent = 0
        try:
            fd = open_under(self.root, path)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise OSError(errno.EINVAL, "not a regular file")
                if st.st_size > limit:
                    raise OSError(errno.EFBIG, "the file is %d bytes, over %d" % (st.st_size, limit))
                while True:
                    chunk = os.read(fd, READ_CHUNK)
                    if not chunk:
                        break
                    sent += len(chunk)
                    if sent > limit:
                        raise OSError(errno.EFBIG, "the file is over %d bytes" % limit)
                    send({"t": "read_data", "id": rid}, chunk)
            finally:
                os.close(fd)
        except ConnectionError:
            return
        except OSError as e:
            name = errno.errorcode.get(e.errno, "EIO")
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                why = "a link on its path (links under %s are not followed)" % self.root
            else:
                why = e.strerror or str(e)
            send({"t": "read_end", "id": rid, "errno": name, "error": "reading %s: %s" % (path, why)})
            return
        send({"t": "read_end", "id": rid, "size": sent})
