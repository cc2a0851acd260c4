"""Frame dispatch of the sandbox runtime (mcp_sandbox_dispatch): each frame
a host sends goes to the part that acts on it (PROTOCOL.md, Host →
sandbox)."""

import site

import mcp_sandbox_channel as channel


class Dispatch:
    """Hands the frames of the hosts to the runtime's parts: an exec to
    admission, whatever else a host that does not drive the sandbox sends
    to admission to hold or drop, and the driver's frames to the part
    each is for."""

    def __init__(self, admission, relay, chan, executor, rpc, egress, lane=None, reads=None):
        self.lane = lane
        self.reads = reads
        self.admission = admission
        self.relay = relay
        self.chan = chan
        self.executor = executor
        self.rpc = rpc
        self.egress = egress

    def handle(self, msg, host=None):
        """Acts on one frame from host (a dict); host is None in tests of
        one host."""
        t = msg.get("t")
        if t == "lane":
            # The offer of a fast lane: the first host's only, at its start.
            if self.lane is not None and host is not None and host is self.lane.main:
                self.lane.open(msg)
            else:
                channel.log("ignoring a lane offer of another host")
            return
        if t == "exec":
            # Whether host drives the sandbox is decided under the lock
            # that admits the call: another host may take it over between
            # a check here and the admission.
            self.admission.admit(msg, host)
            return
        if t == "sleep_claim":
            # A host's claim to put the sandbox to sleep, answered to it,
            # driver or not: of several that would, one may.
            idle = msg.get("idle_ms")
            ok = isinstance(idle, int) and not isinstance(idle, bool) and idle >= 0 and self.admission.claim_sleep(idle / 1000.0)
            frame = {"t": "sleep_claimed", "ok": bool(ok)}
            if host is None:
                self.chan.send(frame)
            else:
                self.chan.send_to(host.out_fd, frame)
            return
        if t == "read" and self.reads is not None:
            # A host's read of a file out, answered to it, driver or not.
            self.reads.serve(msg, host)
            return
        if not self.admission.drives(host):
            self.admission.hold(msg, host)
            return
        if t == "sync":
            # The host lost the streams and attached again: where this
            # answer is read, its frames are whole again.
            n = msg.get("n")
            if isinstance(n, str):
                self.chan.send({"t": "synced", "n": n})
        elif t == "persist":
            self.relay.start_persisting(msg)
        elif t == "interrupt":
            call = self.admission.to_interrupt(msg, host)
            if call is not None:
                self.executor.request_interrupt(call)
        elif t == "rpc_result":
            self.rpc.resolve(msg)
        elif t in ("net_data", "net_ack", "net_close"):
            self.egress.handle(msg)
        elif t == "egress":
            self.egress.start(msg.get("ca"))
        elif t == "site":
            add_site_dirs(msg.get("dirs"))
        else:
            channel.log("ignoring a frame of unknown type %r" % (t,))


def add_site_dirs(dirs):
    """Adds the host's package directories to the import path, as
    site.addsitedir does (their .pth files are processed)."""
    if not isinstance(dirs, list):
        channel.log("ignoring a site frame without a list of directories")
        return
    for d in dirs:
        if isinstance(d, str) and d.startswith("/"):
            site.addsitedir(d)
        else:
            channel.log("ignoring the package directory %r" % (d,))
