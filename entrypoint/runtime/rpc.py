"""Requests from sandbox code to the host: RPCs and progress reports.

Installed in the sandbox as the module `mcp_sandbox_rpc`. User code reaches
these through mcp_sandbox_runtime (rpc, rpc_sync, report_progress); an
RPC waits for the host's `rpc_result`, and progress reports go out as
`progress` frames of the call in flight, at most one every
PROGRESS_INTERVAL. Standard library only.
"""

import asyncio
import math
import threading
import time

import mcp_sandbox_channel as channel
from mcp_sandbox_channel import RPCError  # raised to user code, which finds it in mcp_sandbox_runtime

# PROGRESS_INTERVAL is the least time between two progress frames of a
# call (seconds); reports in between are folded into the next one.
PROGRESS_INTERVAL = 0.05
# MAX_PROGRESS_MESSAGE bounds a progress report's message (characters).
MAX_PROGRESS_MESSAGE = 1024


class RPC:
    """Sends user code's requests over chan and hands each its answer.

    A pending request is a slot: ("future", loop, future) for rpc, whose
    answer settles the future on its loop, or ("event", event, box) for
    rpc_sync, whose answer fills the box and sets the event.
    """

    def __init__(self, chan):
        self.chan = chan
        self.lock = threading.Lock()
        self.next = 0
        self.pending = {}

    def _register(self, slot):
        with self.lock:
            self.next += 1
            rid = self.next
            self.pending[rid] = slot
        return rid

    @staticmethod
    def check_payload(payload):
        if not isinstance(payload, dict):
            raise TypeError("an RPC payload must be a dict, not %s" % type(payload).__name__)

    async def rpc(self, payload):
        """Sends payload to the host's RPC handler and returns its result."""
        self.check_payload(payload)
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        rid = self._register(("future", loop, fut))
        self._send_rpc(rid, payload)
        return await fut

    def _send_rpc(self, rid, payload):
        """Sends an RPC frame; a request too large or not JSON is refused
        here, with a clear error, before the host would see a broken frame."""
        try:
            self.chan.send({"t": "rpc", "id": rid, "payload": payload}, limit=channel.MAX_FRAME - 1024)
        except BaseException:
            with self.lock:
                self.pending.pop(rid, None)
            raise

    def rpc_sync(self, payload):
        """Like rpc, blocking the calling thread instead of awaiting."""
        self.check_payload(payload)
        done = threading.Event()
        box = {}
        rid = self._register(("event", done, box))
        self._send_rpc(rid, payload)
        done.wait()
        if "error" in box:
            raise RPCError(box["error"])
        return box.get("result")

    def resolve(self, msg):
        """Answers the pending request an `rpc_result` frame names, if any."""
        rid = msg.get("id")
        with self.lock:
            slot = self.pending.pop(rid, None) if isinstance(rid, int) else None
        if slot is None:
            return
        ok = msg.get("ok") is True
        err = str(msg.get("error") or "RPC failed")
        if slot[0] == "future":
            _, loop, fut = slot

            def settle():
                if fut.done():
                    return
                if ok:
                    fut.set_result(msg.get("result"))
                else:
                    fut.set_exception(RPCError(err))

            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:
                pass  # the loop is closed
        else:
            _, done, box = slot
            if ok:
                box["result"] = msg.get("result")
            else:
                box["error"] = err
            done.set()

    def fail_pending(self):
        """Fails every request still waiting: its call has ended."""
        with self.lock:
            rids = list(self.pending)
        for rid in rids:
            self.resolve({"id": rid, "ok": False, "error": "the call ended before the host answered"})


class Progress:
    """Sends the progress reports of the call in flight, current() (None
    between calls), over chan."""

    def __init__(self, chan, current):
        self.chan = chan
        self.current = current
        self.wake = threading.Event()

    def report_progress(self, progress, total=None, message=None):
        """Tells the client how far the call is: progress out of total
        (when known), with a message. It never blocks the code nor raises:
        without a client that asked for progress it does nothing, reports
        come out at most every PROGRESS_INTERVAL (one made sooner goes out
        when the interval has passed, unless a newer one replaced it; the
        last one of a call always goes, before its result), and values
        that are not finite numbers are ignored."""
        try:
            call = self.current()
            if call is None or not call.progress:
                return
            frame = {"t": "progress", "id": call.id, "progress": float(progress)}
            if not math.isfinite(frame["progress"]):
                return
            if total is not None:
                total = float(total)
                if math.isfinite(total) and total > 0:
                    frame["total"] = total
            if message is not None:
                frame["message"] = str(message)[:MAX_PROGRESS_MESSAGE]
            with call.progress_lock:
                if call.progress_done:
                    return
                call.progress_pending = frame
            self.wake.set()
        except Exception:  # a bad argument or a failing __str__: ignored
            pass

    def sender(self):
        """Sends the current call's pending progress report as soon as the
        interval since the last one allows; runs on its own thread."""
        while True:
            self.wake.wait()
            self.wake.clear()
            call = self.current()
            while call is not None:
                with call.progress_lock:
                    if call.progress_done or call.progress_pending is None:
                        break
                    wait = call.progress_at + PROGRESS_INTERVAL - time.monotonic()
                    if wait <= 0:
                        frame, call.progress_pending = call.progress_pending, None
                        call.progress_at = time.monotonic()
                        self.chan.send(frame)
                        continue
                time.sleep(wait)

    def flush(self, call):
        """Ends the call's progress: sends its pending report, if any; no
        progress frame of the call follows."""
        with call.progress_lock:
            call.progress_done = True
            frame, call.progress_pending = call.progress_pending, None
            if frame is not None:
                self.chan.send(frame)
