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

import json
import os
import socket
import string
import threading

import mcp_sandbox_channel as channel

# SOCKET is where a sandbox finds its lane (engine.LaneDir + "/sock").
SOCKET = "/run/mcp-lane/sock"
# TOKEN_HEX is the length of the lane's secret, hex-encoded.
TOKEN_HEX = 64


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
            self.breaking = True
            self.pending.append(data)
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

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
