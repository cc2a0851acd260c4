"""Admission of calls in the sandbox runtime (mcp_sandbox_admission).

Which host drives the sandbox and which call is current are decided here,
under one lock: an exec frame's call becomes current, or is answered
(busy, or a ProtocolError result) on the connection of the host that sent
it; an exec of a host that does not drive the sandbox takes it over when
no call runs (PROTOCOL.md, Persistent sandboxes).
"""

import queue
import threading
import time

import mcp_sandbox_channel as channel
import mcp_sandbox_executor as executor

# SLEEP_CLAIM_S is how long a host's claim to put the sandbox to sleep
# keeps the others from the same: the time from the grant to the
# checkpoint's freeze (a frozen runtime answers no claim), with room.
SLEEP_CLAIM_S = 5


class Admission:
    """The call in flight and the host that drives the sandbox.

    lock guards call (None between calls), driver (the host whose frames
    the runtime acts on and whose connection its frames go to; None once
    its stream ended) and last_call (when the last call ended, or the
    sandbox started). A call becomes current in admit, on a reader thread,
    when its exec frame arrives, and ends in end, on the main thread.
    Admitted calls wait in inbox, as (call, code), for the main thread;
    None there ends the runtime.

    A host is None in tests of one host: it always drives.
    """

    def __init__(self, chan, egress, driver, add_site_dirs):
        self.chan = chan
        self.egress = egress
        self.add_site_dirs = add_site_dirs
        self.lock = threading.Lock()
        self.call = None
        self.driver = driver
        self.last_call = time.time()
        self.sleep_claimed = 0.0  # when a host was granted a sleep claim
        self.inbox = queue.SimpleQueue()

    def current(self):
        """The call in flight, or None."""
        return self.call

    def admit(self, msg, host=None):
        """Makes an exec frame's call current and queues it for the main
        thread, or answers it with a ProtocolError result; an exec of a
        host that does not drive the sandbox (host, when set and not the
        driver) takes it over if no call runs, else is answered busy. Both
        are decided under lock, and every answer goes to host's own
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
        with self.lock:
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

    def drives(self, host):
        """Reports whether host drives the sandbox (None, a test's one
        host, always does). Read without the lock: where it matters,
        the decision is taken again under it."""
        return host is None or host is self.driver

    def hold(self, msg, host):
        """Keeps a frame of a host that does not drive the sandbox for
        when it takes it over: its egress and site frames; the rest is
        dropped (it belongs to a call that is not its own)."""
        if msg.get("t") in ("egress", "site"):
            host.setup.append(msg)

    def take_over(self, host):
        """Makes host the sandbox's driver (lock held, no call running):
        its frames go to it, the egress connections of the previous one
        are closed, and the egress and site frames it sent meanwhile are
        applied."""
        channel.log("host %s takes the sandbox over" % host.name)
        self.driver = host
        self.egress.reset()
        self.chan.retarget(host.out_fd)
        setup, host.setup = host.setup, []
        for m in setup:
            if m.get("t") == "egress":
                self.egress.start(m.get("ca"))
            else:
                self.add_site_dirs(m.get("dirs"))

    def to_interrupt(self, msg, host):
        """The call an interrupt frame of host stops, marked interrupted, or
        None: not the driver's (another host took over: its call ids are
        its own), no such call running, or one already interrupted."""
        with self.lock:
            if not self.drives(host):
                return None
            call = self.call
            if call is None or call.id != msg.get("id") or call.interrupted:
                return None
            call.interrupted = True
            return call

    def leave(self, host):
        """A host's connection ended: if it drove the sandbox, frames go
        nowhere until another takes it over. Returns its call, whose
        caller is gone, marked interrupted (None: no call of its runs, or
        one already interrupted)."""
        with self.lock:
            if host is not self.driver:
                return None
            self.driver = None
            self.chan.retarget(None)
            call = self.call
            if call is not None and not call.interrupted:
                call.interrupted = True
            else:
                call = None
        channel.log("host %s is gone" % host.name)
        return call

    def end(self):
        """Ends the current call: the next may be admitted."""
        with self.lock:
            self.call = None
            self.last_call = time.time()

    def touch(self):
        """Starts the idle time again, as a call's end does: the sandbox
        was asleep (checkpointed and restored), which is no idle time; a
        claim to put it to sleep is spent."""
        with self.lock:
            self.last_call = time.time()
            self.sleep_claimed = 0.0

    def claim_sleep(self, idle_s):
        """Grants a host the right to put the sandbox to sleep when no
        call runs, none ended within idle_s, and no host was granted it
        within SLEEP_CLAIM_S: of several bridges that would, one does."""
        with self.lock:
            now = time.time()
            if self.call is not None or now - self.last_call < idle_s or now - self.sleep_claimed < SLEEP_CLAIM_S:
                return False
            self.sleep_claimed = now
            return True

    def idle(self, seconds):
        """Reports whether no call has run for seconds (never, when 0)."""
        with self.lock:
            return self.call is None and seconds > 0 and time.time() - self.last_call > seconds
