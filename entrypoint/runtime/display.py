"""A call's outputs on their way to the host: its printed output, the
images display() shows, the figures it leaves open and its files out.

Installed in the sandbox as the module `mcp_sandbox_display`. What turns
objects into images, the matplotlib backend and the files-out watch are in
mcp_sandbox_outputs (outputs.py); this module sends what they produce as
`out`, `image` and `file` frames of the call in flight. Standard library
only.
"""

import base64
import codecs
import os
import select
import sys
import threading
import time

import mcp_sandbox_channel as channel
import mcp_sandbox_outputs as outputs

PUMP_DELAY = 0.001  # seconds an output pump waits before sending what it woke for


class Pump(threading.Thread):
    """Reads one user output pipe and sends it as `out` frames of the current call.

    The pipe is non-blocking and read under the pump's lock, so the main
    thread can take the lock at the end of a call and drain what is left
    itself: every byte written before the call ended is sent before its
    result, with no hand-off between threads when there is nothing left.
    """

    def __init__(self, chan, current, stream, rfd):
        super().__init__(name="mcp-pump-" + stream, daemon=True)
        self.chan = chan
        self.current = current
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
                chunk = os.read(self.rfd, channel.READ_CHUNK)
            except BlockingIOError:
                return True
            except InterruptedError:
                continue
            except OSError as e:
                channel.log("output pipe %s failed: %s" % (self.stream, e))
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
        call = self.current()
        if call is None:
            return  # written between calls: nobody to give it to
        text = self.decoder.decode(call.admit(self.stream, data) if data else b"", final)
        if text:
            self.chan.send({"t": "out", "id": call.id, "stream": self.stream, "data": text})


class Display:
    """Sends the outputs of the call in flight, current() (None between
    calls), over chan.

    executor's interruptible flag is raised while the open figures are
    drawn, so that an interrupt stops a figure that takes too long.
    """

    def __init__(self, chan, current, executor):
        self.chan = chan
        self.current = current
        self.executor = executor
        self.watch = outputs.Watch()
        self.pumps = []
        self.poll = select.poll()

    def start_pumps(self, out_r, err_r):
        """Starts the pumps of the user's stdout and stderr pipes (their
        read ends)."""
        self.pumps = [Pump(self.chan, self.current, "stdout", out_r), Pump(self.chan, self.current, "stderr", err_r)]
        for p in self.pumps:
            self.poll.register(p.rfd, select.POLLIN)
            p.start()

    def sync_output(self):
        """Sends the output written before now, before the call's result.

        One poll finds the pipes holding output; the others are not read
        (a pump in the middle of sending holds its lock, which finish
        waits for)."""
        try:
            ready = {fd for fd, _ in self.poll.poll(0)}
        except InterruptedError:
            ready = None
        for pump in self.pumps:
            pump.finish(ready is None or pump.rfd in ready)

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
            call = self.current()
            if call is None:
                continue  # shown between calls: nobody to give it to
            if callable(getattr(obj, "savefig", None)):
                call.shown.add(id(obj))
            self.send_image(call, *image)

    def send_image(self, call, data, mime):
        """Sends an image frame of the call, if the call admits the image."""
        if call.admit_image(len(data)):
            if self.chan.on_lane():
                self.chan.send_data({"t": "image", "id": call.id, "mime": mime}, data)
                return
            encoded = base64.b64encode(data).decode("ascii")
            self.chan.send({"t": "image", "id": call.id, "mime": mime, "data": encoded})

    def show_figures(self, call):
        """Shows the figures the call left open (but those display() showed
        already), then closes every figure; a failure is reported on the
        call's stderr."""
        try:
            figures = outputs.open_figures()
            if not figures:
                return
            self.executor.interruptible = True
            try:
                for fig in figures:
                    if id(fig) not in call.shown:
                        self.display(fig)
                outputs.close_figures()
            finally:
                self.executor.interruptible = False
        except BaseException as e:  # the code's figure may be broken; the call is over
            self.executor.interruptible = False
            print("showing the open figures failed: %s: %s" % (type(e).__name__, e), file=sys.stderr)

    # ------------------------------------------------------------ files out

    def send_files(self, call, files):
        """Sends the small files out and the images out of the call as file
        frames, before its result; the host reads the others itself."""
        room = max(0, call.max_image_bytes - call.image_bytes)
        for path, data in outputs.inline(files, room):
            if self.chan.on_lane():
                if data and len(data) <= channel.MAX_FRAME - 1024:
                    self.chan.send_data({"t": "file", "id": call.id, "path": path}, data)
                continue
            frame = {"t": "file", "id": call.id, "path": path, "data": base64.b64encode(data).decode("ascii")}
            try:
                self.chan.send(frame, limit=channel.MAX_FRAME - 1024)
            except channel.RPCError:
                pass  # over the frame size: the host reads it through the engine
