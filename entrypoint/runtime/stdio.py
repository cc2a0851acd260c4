"""The standard streams of the sandbox runtime (mcp_sandbox_stdio).

At start the frame protocol moves onto private descriptors (duplicates of
fds 0, 1 and 2), fd 0 is pointed at /dev/null and fds 1 and 2 at pipes
whose read ends the display pumps; before and after each call they are
put back, and sys.stdin/stdout/stderr with them, if user code changed
them (PROTOCOL.md, Channels).
"""

import io
import os
import sys

import mcp_sandbox_channel as channel


class Stdio:
    """The runtime's standard streams: in_fd and out_fd carry the host's
    frames, out_r and err_r are the read ends of the user's stdout and
    stderr, and restore() puts fds 0-2 and sys.std* back at the runtime's
    ends."""

    def __init__(self):
        """Moves the protocol to private descriptors and makes the pipes of
        the user's output; restore then points fds 0-2 elsewhere."""
        self.in_fd = os.dup(0)
        self.out_fd = os.dup(1)
        diag_fd = os.dup(2)
        channel.set_diag_fd(diag_fd)
        self.null_fd = os.open(os.devnull, os.O_RDONLY)
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        for fd in (self.in_fd, self.out_fd, diag_fd, self.null_fd, self.out_r, self.err_r, self.out_w, self.err_w):
            os.set_inheritable(fd, False)
        self.std_ids = {0: file_id(self.null_fd), 1: file_id(self.out_w), 2: file_id(self.err_w)}
        self.std = None

    def restore(self, descriptors=True):
        """Points fds 0-2 and sys.std* back at the runtime's ends, if changed
        (fds 0-2 are looked at when descriptors is set)."""
        if self.intact(descriptors):
            return
        os.dup2(self.null_fd, 0)
        os.dup2(self.out_w, 1)
        os.dup2(self.err_w, 2)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "rb", closefd=False), encoding="utf-8")
        sys.stdout = text_writer(1)
        sys.stderr = text_writer(2)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        self.std = (sys.stdin, sys.stdout, sys.stderr)

    def intact(self, descriptors=True):
        """Reports whether sys.std* (and, when descriptors is set, fds 0-2)
        are still the runtime's."""
        std = self.std
        if std is None or (sys.stdin, sys.stdout, sys.stderr) != std or any(f.closed for f in std):
            return False
        if not descriptors:
            return True
        try:
            return all(file_id(fd) == self.std_ids[fd] for fd in (0, 1, 2))
        except OSError:
            return False


def text_writer(fd):
    """A text stream on fd, line-buffered like a terminal: print() costs
    one write and one frame per line; the rest is flushed when the call
    ends."""
    raw = io.FileIO(fd, "wb", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace", line_buffering=True)


def file_id(fd):
    """The device and inode of the file open on fd."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)
