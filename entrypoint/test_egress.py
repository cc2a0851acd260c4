"""Unit tests of the runtime's egress endpoint, entrypoint/runtime/egress.py.

Run them from this directory:

    cd entrypoint && python3 -m unittest -v test_egress

Like test_runtime, each test starts the runtime as a subprocess in host mode
and speaks frames with it; here the test plays the host's side of the
egress transport (PROTOCOL.md): it sends `egress`, reads `net_open`,
`net_data` and `net_close`, and sends `net_data`, `net_ack` and `net_close`.
"""

import os
import tempfile
import threading
import unittest

from runtime_harness import Runtime, code, load_runtime_modules, stream_text

CA = "-----BEGIN CERTIFICATE-----\nTUNQIHRlc3QgQ0E=\n-----END CERTIFICATE-----\n"
CONNECT = code(
    """
    import os, socket, urllib.parse
    _u = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
    """
)


class EgressTest(unittest.TestCase):
    """The endpoint of a runtime that received an egress frame."""

    def setUp(self):
        self.rt = Runtime()
        self.addCleanup(self.rt.close)
        self.assertEqual(self.rt.recv()["t"], "ready")
        self.rt.send({"t": "egress", "ca": CA})
        self.ids = 0
        self.net = []  # net_* frames read while waiting for a call
        self.run_code(CONNECT)

    def run_code(self, source, timeout=None):
        """Runs a call; returns its stdout. net_* frames read meanwhile go
        to self.net; timeout (seconds) bounds the wait for each frame,
        when given."""
        self.ids += 1
        id = "call-%d" % self.ids
        self.rt.exec(source, id)
        outs = []
        while True:
            frame = self.rt.recv() if timeout is None else self.rt.recv(timeout)
            if frame["t"].startswith("net_"):
                self.net.append(frame)
            elif frame["t"] == "out" and frame["id"] == id:
                outs.append(frame)
            elif frame["t"] == "result" and frame["id"] == id:
                self.assertEqual(frame["status"], "ok", frame)
                return stream_text(outs)
            elif frame["t"] != "started":
                raise AssertionError("unexpected frame %r" % (frame,))

    def net_frame(self):
        """The next net_* frame, read earlier or now."""
        if self.net:
            return self.net.pop(0)
        frame = self.rt.recv()
        self.assertTrue(frame["t"].startswith("net_"), frame)
        return frame

    def open_conn(self, name="s"):
        """Connects user code's socket name to the endpoint; returns its cid."""
        self.run_code("%s = socket.create_connection((_u.hostname, _u.port))" % name)
        frame = self.net_frame()
        self.assertEqual(set(frame), {"t", "cid"})
        self.assertEqual(frame["t"], "net_open")
        self.assertIs(type(frame["cid"]), int)
        return frame["cid"]

    def test_environment(self):
        out = self.run_code(
            code(
                """
                url = os.environ["HTTP_PROXY"]
                print(url.startswith("http://127.0.0.1:"), "NO_PROXY" in os.environ, "no_proxy" in os.environ)
                print(all(os.environ[v] == url for v in ("HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")))
                b = os.environ["SSL_CERT_FILE"]
                print(b, all(os.environ[v] == b for v in ("REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE")))
                print(open(b).read().endswith(%r))
                """
                % CA
            )
        )
        self.assertEqual(out, "True False False\nTrue\n/tmp/mcp-egress/ca-bundle.pem True\nTrue\n")

    def test_bytes_both_ways_and_acks(self):
        cid = self.open_conn()
        self.run_code("s.sendall(b'ping')")
        self.assertEqual(self.net_frame(), {"t": "net_data", "cid": cid, "len": 4, "payload": b"ping"})
        self.rt.send({"t": "net_data", "cid": cid, "payload": b"pong"})
        self.assertEqual(self.run_code("print(s.recv(4))"), "b'pong'\n")
        self.assertEqual(self.net_frame(), {"t": "net_ack", "cid": cid, "n": 4})
        # Ids grow for the runtime's life.
        self.assertGreater(self.open_conn("s2"), cid)

    def test_sandbox_waits_for_credit(self):
        egress = load_runtime_modules()["egress"]
        cid = self.open_conn()
        total = 4 * egress.UP_WINDOW
        self.run_code(
            "import threading\nthreading.Thread(target=s.sendall, args=(bytes(range(256)) * %d,), daemon=True).start()"
            % (total // 256)
        )
        got, unacked = bytearray(), 0
        while len(got) < total:
            if unacked == egress.UP_WINDOW:
                # No credit left: a call still runs, and no byte comes
                # before its result.
                self.assertEqual(self.run_code("print('calls go on')"), "calls go on\n")
                self.assertEqual(self.net, [])
                self.rt.send({"t": "net_ack", "cid": cid, "n": unacked})
                unacked = 0
            frame = self.net_frame()
            self.assertEqual((frame["t"], frame["cid"]), ("net_data", cid))
            data = frame["payload"]
            self.assertEqual(frame["len"], len(data))
            self.assertLessEqual(len(data), egress.CHUNK)
            got += data
            unacked += len(data)
            self.assertLessEqual(unacked, egress.UP_WINDOW)
        self.assertEqual(bytes(got), bytes(range(256)) * (total // 256))

    def test_stalled_socket_never_blocks_calls(self):
        egress = load_runtime_modules()["egress"]
        cid = self.open_conn()
        self.rt.send(*[{"t": "net_data", "cid": cid, "payload": bytes(egress.CHUNK)}] * (egress.DOWN_WINDOW // egress.CHUNK))
        for i in range(5):
            self.assertEqual(self.run_code("print(%d)" % i), "%d\n" % i)
        received = self.run_code(
            code(
                """
                n = 0
                while n < %d:
                    n += len(s.recv(1 << 16))
                print(n)
                """
                % egress.DOWN_WINDOW
            )
        )
        self.assertEqual(received, "%d\n" % egress.DOWN_WINDOW)
        acked = 0
        while acked < egress.DOWN_WINDOW:
            frame = self.net_frame()
            self.assertEqual((frame["t"], frame["cid"]), ("net_ack", cid))
            acked += frame["n"]
        self.assertEqual(acked, egress.DOWN_WINDOW)

    def test_host_close_is_answered_after_delivery(self):
        cid = self.open_conn()
        self.rt.send(
            {"t": "net_data", "cid": cid, "payload": b"last words"},
            {"t": "net_close", "cid": cid},
        )
        frame = self.net_frame()
        if frame["t"] == "net_ack":  # delivered before the close was read
            self.assertEqual(frame, {"t": "net_ack", "cid": cid, "n": 10})
            frame = self.net_frame()
        self.assertEqual(frame, {"t": "net_close", "cid": cid})
        self.assertEqual(self.run_code("print(s.recv(100), s.recv(100))"), "b'last words' b''\n")
        # Frames for a closed connection are ignored.
        self.rt.send({"t": "net_data", "cid": cid, "payload": b"x"}, {"t": "net_close", "cid": cid})
        self.assertEqual(self.run_code("print('fine')"), "fine\n")
        self.assertEqual(self.net, [])

    def test_sandbox_close(self):
        cid = self.open_conn()
        self.run_code("s.close()")
        self.assertEqual(self.net_frame(), {"t": "net_close", "cid": cid})

    def test_host_past_its_credit_closes_the_connection(self):
        egress = load_runtime_modules()["egress"]
        cid = self.open_conn()
        # Both ends of the socket get small buffers and user code does not
        # read, so that at most a chunk is delivered (and acknowledged)
        # before the last of window + 2 chunks arrives.
        self.run_code(
            code(
                """
                import gc
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                for o in gc.get_objects():
                    if type(o).__name__ == "Conn":
                        o.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
                """
            )
        )
        self.rt.send(*[{"t": "net_data", "cid": cid, "payload": bytes(egress.CHUNK)}] * (egress.DOWN_WINDOW // egress.CHUNK + 2))
        acked, frame = 0, self.net_frame()
        while frame["t"] == "net_ack":
            acked += frame["n"]
            frame = self.net_frame()
        self.assertEqual(frame, {"t": "net_close", "cid": cid})
        self.assertLessEqual(acked, egress.CHUNK)

    def test_connection_limit(self):
        egress = load_runtime_modules()["egress"]
        out = self.run_code(
            code(
                """
                socks = [socket.create_connection((_u.hostname, _u.port)) for _ in range(%d)]
                for so in socks[-4:]:
                    so.settimeout(10)
                print([so.recv(1) for so in socks[-4:]])
                """
                % (egress.MAX_CONNS + 4)
            )
        )
        self.assertEqual(out, "[b'', b'', b'', b'']\n")
        opens = [f for f in self.net if f["t"] == "net_open"]
        self.assertEqual(len(opens), egress.MAX_CONNS)

    def test_out_of_descriptors(self):
        # User code takes every descriptor but the one its own socket
        # needs: the connection is complete in the kernel, waiting in the
        # listener's backlog, and the runtime has no descriptor to accept
        # it into. It is closed at once, never announced, instead of
        # waiting (silent) until user code frees a descriptor; once it
        # does, connections are served again.
        out = self.run_code(
            code(
                """
                import resource, time
                soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 32, hard))
                fill = []
                try:
                    while True:
                        fill.append(os.open("/dev/null", os.O_RDONLY))
                except OSError:
                    pass
                os.close(fill.pop())
                c = socket.socket()
                c.connect((_u.hostname, _u.port))
                c.settimeout(10)  # a hang, not a speed, is what it catches
                try:
                    got = c.recv(1)
                except socket.timeout:
                    got = "silent"
                c.close()
                for fd in fill:
                    os.close(fd)
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
                print(got)
                """
            ),
            timeout=30,
        )
        self.assertEqual(out, "b''\n")
        self.assertEqual([f for f in self.net if f["t"] == "net_open"], [])
        self.open_conn()


class ReadFramesTest(unittest.TestCase):
    """channel.read_frames: payloads after their line, however the reads
    cut the stream."""

    def test_payloads_across_reads(self):
        channel = load_runtime_modules()["channel"]
        stream = (
            b'{"t":"net_data","cid":1,"len":5}\nab\ncd'
            + b'not json\n'
            + b'{"t":"net_close","cid":1}\n'
            + b'{"t":"net_data","cid":2,"len":3}\n\n\n\n'
            + b'[1]\n{"t":"x","len":0}\n'
        )
        for step in (1, 2, 7, len(stream)):
            r, w = os.pipe()
            got = []
            reader = threading.Thread(target=channel.read_frames, args=(r, got.append))
            reader.start()
            for i in range(0, len(stream), step):
                os.write(w, stream[i : i + step])
            os.close(w)
            reader.join(5)
            os.close(r)
            self.assertEqual(
                got,
                [
                    {"t": "net_data", "cid": 1, "len": 5, "payload": b"ab\ncd"},
                    {"t": "net_close", "cid": 1},
                    {"t": "net_data", "cid": 2, "len": 3, "payload": b"\n\n\n"},
                    {"t": "x", "len": 0},
                ],
                "reads of %d bytes" % step,
            )

    def test_payload_over_the_frame_limit_stops_reading(self):
        channel = load_runtime_modules()["channel"]
        r, w = os.pipe()
        os.write(w, b'{"t":"net_data","cid":1,"len":%d}\n{"t":"late"}\n' % (channel.MAX_FRAME + 1))
        os.close(w)
        got = []
        channel.read_frames(r, got.append)
        os.close(r)
        self.assertEqual(got, [])


class NoEgressTest(unittest.TestCase):
    """A runtime without an egress frame, and the module's helpers."""

    def test_no_endpoint_without_egress_frame(self):
        rt = Runtime()
        self.addCleanup(rt.close)
        self.assertEqual(rt.recv()["t"], "ready")
        outs, result = rt.run("import os\nprint(os.environ.get('HTTP_PROXY', '').startswith('http://127.0.0.1:'))", "c1")
        self.assertEqual((result["status"], stream_text(outs)), ("ok", "False\n"))

    def test_write_bundle(self):
        egress = load_runtime_modules()["egress"]
        with tempfile.TemporaryDirectory() as d:
            path = egress.write_bundle(CA, os.path.join(d, "sub", "bundle.pem"))
            with open(path) as f:
                text = f.read()
        self.assertTrue(text.endswith(CA))
        roots = egress.system_roots()
        self.assertTrue(text.startswith(roots))
        if roots:
            self.assertIn("BEGIN CERTIFICATE", roots)


if __name__ == "__main__":
    unittest.main()
