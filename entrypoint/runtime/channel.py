"""The runtime's channel to the host: frames out, frames in, diagnostics.

Installed in the sandbox as the module `mcp_sandbox_channel`. Frames are
JSON objects, one a line, on the private protocol descriptors, a frame
with `len` followed by that many raw bytes (see PROTOCOL.md); the
runtime's own diagnostics go to the container's stderr. Standard library
only.
"""

import json
import os
import threading

# MAX_FRAME bounds a frame in either direction (bytes).
MAX_FRAME = 16 << 20
# READ_CHUNK is how much one read of a descriptor asks for (bytes).
READ_CHUNK = 1 << 18

# diag_fd is where log() writes: the container's stderr, moved to a
# private descriptor by set_diag_fd when the runtime sets up its streams.
diag_fd = 2


class RPCError(Exception):
    """An RPC the host answered with an error."""


def set_diag_fd(fd):
    """Makes log() write to fd from now on."""
    global diag_fd
    diag_fd = fd


def log(msg):
    """Writes a diagnostic line of the runtime itself to the container's stderr."""
    try:
        os.write(diag_fd, ("mcp-runtime: " + msg + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


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
        self.broken = False  # the host's end is gone: frames are dropped
        # lane is the first host's fast lane while it carries its frames
        # (mcp_sandbox_lane): what goes to its fd goes through it.
        self.lane = None

    def retarget(self, fd):
        """Sends the frames from now on to fd (None: nowhere, dropped),
        the host that drives the sandbox now; frames held are dropped."""
        with self.lock:
            self.fd = fd
            self.held = None
            self.broken = fd is None

    def on_lane(self):
        """Reports whether the frames go to a lane now (where images and
        files travel raw, not in base64)."""
        lane = self.lane
        return lane is not None and self.fd == lane.fd and not lane.breaking

    def send_to(self, fd, frame):
        """Writes frame to fd, another host's connection than the one the
        frames go to (its ready frame, a busy answer)."""
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("ascii")
        with self.lock:
            lane = self.lane
            if lane is not None and fd == lane.fd:
                lane.write(data)
            else:
                write_all(fd, data)

    def send_data_to(self, fd, frame, payload):
        """send_to for a frame with its raw bytes (see send_data)."""
        frame["len"] = len(payload)
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("ascii") + payload
        with self.lock:
            lane = self.lane
            if lane is not None and fd == lane.fd:
                lane.write(data)
            else:
                write_all(fd, data)

    def send(self, frame, limit=0):
        """Writes frame (or keeps it, when held); a frame over limit bytes
        (when limit is set) is refused with RPCError."""
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("ascii")
        if limit and len(data) > limit:
            raise RPCError("the RPC request is %d bytes, over the %d-byte frame limit" % (len(data), limit))
        with self.lock:
            if self.held is not None:
                self.held.append(data)
                return
            self._write(data)

    def send_data(self, frame, payload):
        """Writes frame with a `len` member followed by payload's raw bytes
        (or keeps them, when held)."""
        frame["len"] = len(payload)
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("ascii") + payload
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
        if self.broken:
            return
        lane = self.lane
        if lane is not None and self.fd == lane.fd:
            lane.write(data)
            return
        try:
            write_all(self.fd, data)
        except OSError as e:
            # The host's end is gone (it detached, or died): its frames
            # go nowhere until another host takes the sandbox over.
            self.broken = True
            log("the host's stream is gone (%s); dropping frames" % e)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_frames(fd, handle, batch_done=None, counter=None):
    """Reads the host's frames from fd and passes each (a dict) to handle;
    returns at the end of the input or after a frame over MAX_FRAME. After
    the frames of each read are handled, batch_done (when given) runs.

    A frame with a positive integer `len` member is followed by that many
    raw bytes, which handle gets as its `payload` member (bytes). A line
    that is not a JSON object is logged and skipped, and so is a frame
    handle fails on: the host decides what is fatal. counter, when given,
    has its read member increased by the bytes of each whole frame.
    """
    buf = bytearray()
    pos = 0  # where the next frame starts in buf
    need = 0  # bytes a frame's payload still waits for
    pending = None  # that frame
    while True:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except InterruptedError:
            continue
        except OSError as e:
            log("reading frames: %s" % e)
            chunk = b""
        if not chunk:
            return
        if pos:
            del buf[:pos]
            pos = 0
        buf += chunk
        while True:
            if pending is not None:
                if len(buf) - pos < need:
                    break
                pending["payload"] = bytes(buf[pos : pos + need])
                pos += need
                if counter is not None:
                    counter.read += need
                msg, pending, need = pending, None, 0
            else:
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                msg = decode(bytes(buf[pos:nl]))
                if counter is not None:
                    counter.read += nl + 1 - pos
                pos = nl + 1
                if msg is None:
                    continue
                n = msg.get("len")
                if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                    if n > MAX_FRAME:
                        log("frame payload of %d bytes from the host, over %d; stopping" % (n, MAX_FRAME))
                        return
                    pending, need = msg, n
                    continue
            try:
                handle(msg)
            except Exception as e:  # keep serving: the host decides what is fatal
                log("handling a frame: %r" % (e,))
        if batch_done is not None:
            try:
                batch_done()
            except Exception as e:
                log("after a batch of frames: %r" % (e,))
        if pending is None and len(buf) - pos > MAX_FRAME:
            log("frame over %d bytes from the host; stopping" % MAX_FRAME)
            return


def decode(line):
    """The frame a line holds, or None (logged) when it is not a JSON object;
    blank lines, which a host sends after it lost its streams, are None
    quietly."""
    if not line.strip():
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        log("ignoring a malformed frame from the host")
        return None
    if not isinstance(msg, dict):
        log("ignoring a frame that is not an object")
        return None
    return msg
