"""Unit tests of a call's rich outputs: display(), figures, files out
(entrypoint/runtime/outputs.py and display.py through the runtime; standard
library only).

Run them from this directory:

    cd entrypoint && python3 -m unittest -v test_outputs

The runtime runs as a subprocess in host mode, as in test_runtime. matplotlib
and PIL are not on the host: the figure tests give the code a stand-in
pyplot module with the same entry points the runtime uses; the sandbox image
with the real ones is covered by the integration tests.
"""

import base64
import json
import os
import shutil
import tempfile
import unittest

from runtime_harness import Runtime, code, load_runtime_modules

_modules = load_runtime_modules()
outputs = _modules["outputs"]
channel = _modules["channel"]
executor = _modules["executor"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Call:
    """The frames of one call: output text, images, result."""

    def __init__(self, rt, source, id, **limits):
        rt.send(dict({"t": "exec", "id": id, "code": source, "max_output": 0}, **limits))
        self.stdout, self.stderr, self.images, self.files = "", "", [], {}
        while True:
            f = rt.recv()
            if f.get("id") != id:
                raise AssertionError("a frame of another call: %r" % (f,))
            if f["t"] == "out":
                if f["stream"] == "stdout":
                    self.stdout += f["data"]
                else:
                    self.stderr += f["data"]
            elif f["t"] == "image":
                if set(f) != {"t", "id", "mime", "data"}:
                    raise AssertionError("bad image frame: %r" % (f,))
                self.images.append((f["mime"], base64.b64decode(f["data"])))
            elif f["t"] == "file":
                if set(f) != {"t", "id", "path", "data"} or f["path"] in self.files:
                    raise AssertionError("bad file frame: %r" % (f,))
                self.files[f["path"]] = base64.b64decode(f["data"])
            elif f["t"] == "result":
                self.result = f
                return
            elif f["t"] != "started":
                raise AssertionError("unexpected frame: %r" % (f,))


class AdmitImageTest(unittest.TestCase):
    """Call.admit_image alone: the one place that decides whether an image
    goes to the host and counts what did not."""

    def test_limits_and_frame_size(self):
        c = executor.Call("1", 0, max_images=2, max_image_bytes=16 << 20)
        fits = (channel.MAX_FRAME - 1024) // 4 * 3  # the largest whose base64 fits a frame
        self.assertFalse(c.admit_image(fits + 1), "over a frame in base64")
        self.assertEqual((c.images, c.image_bytes, c.dropped.get("images")), (0, 0, 1))
        self.assertTrue(c.admit_image(fits))
        self.assertFalse(c.admit_image(5 << 20), "over the bytes left")
        self.assertTrue(c.admit_image(1))
        self.assertFalse(c.admit_image(1), "over the count")
        self.assertEqual((c.images, c.image_bytes, c.dropped.get("images")), (2, fits + 1, 3))


class OutputsTest(unittest.TestCase):
    def setUp(self):
        self.rt = Runtime()
        self.addCleanup(self.rt.close)
        ready = self.rt.recv()
        self.assertEqual(ready["t"], "ready")
        self.n = 0

    def call(self, source, **limits):
        self.n += 1
        return Call(self.rt, code(source), str(self.n), **limits)

    def test_display_bytes_paths_and_text(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "dot.png"), "wb") as f:
            f.write(PNG)
        c = self.call(
            """
            import base64, pathlib
            png = base64.b64decode(%r)
            display(png)
            display(b"<svg xmlns='http://www.w3.org/2000/svg'/>")
            display(b"\\x00\\x01raw", mime="image/png")
            display(pathlib.Path(%r))
            display(%r)
            display("just text", {"a": 1})
            """
            % (base64.b64encode(PNG).decode(), os.path.join(d, "dot.png"), os.path.join(d, "dot.png"))
        )
        self.assertEqual(c.result["status"], "ok", c.result)
        self.assertEqual(
            [m for m, _ in c.images], ["image/png", "image/svg+xml", "image/png", "image/png", "image/png"]
        )
        self.assertEqual(c.images[0][1], PNG)
        self.assertEqual(c.images[3][1], PNG)
        self.assertEqual(c.stdout, "just text\n{'a': 1}\n")

    def test_display_refuses_what_is_not_an_image(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        notes = os.path.join(d, "notes.txt")
        with open(notes, "w") as f:
            f.write("hello")
        for source, message in (
            ("display(b'plain bytes')", "not a PNG, JPEG, GIF, WebP or SVG image"),
            ("display(%r)" % notes, "notes.txt is not a PNG"),
            ("display(b'x', mime='text/html')", "mime must be one of"),
        ):
            with self.subTest(source=source):
                c = self.call(source)
                self.assertEqual((c.result["status"], c.result["exc_type"]), ("error", "ValueError"))
                self.assertIn(message, c.result["exc_message"])
                self.assertEqual(c.images, [])
        c = self.call("x = 41 + 1\nprint(x)")
        self.assertEqual(c.stdout, "42\n", "the session lives on")

    def test_image_limits_drop_and_count(self):
        c = self.call("for i in range(5):\n    display(%r)" % PNG, max_images=3)
        self.assertEqual(len(c.images), 3)
        self.assertEqual(c.result["dropped"].get("images"), 2)
        c = self.call("for i in range(4):\n    display(%r)" % PNG, max_image_bytes=2 * len(PNG) + 1)
        self.assertEqual(len(c.images), 2)
        self.assertEqual(c.result["dropped"].get("images"), 2)
        c = self.call("display(%r)" % PNG)
        self.assertEqual((len(c.images), "images" in c.result["dropped"]), (1, False), "limits are per call")

    def test_image_over_a_frame_dropped_and_counted(self):
        # Within the call's byte limit but too large for one frame once in
        # base64: dropped, counted, and takes nothing from the limits.
        c = self.call(
            "display(%r + bytes(13 << 20))\ndisplay(%r)" % (PNG[:8], PNG), max_images=1, max_image_bytes=64 << 20
        )
        self.assertEqual(c.result["status"], "ok", c.result)
        self.assertEqual(c.images, [("image/png", PNG)])
        self.assertEqual(c.result["dropped"].get("images"), 1)

    def test_bad_limits_are_refused(self):
        c = self.call("print(1)", max_images=-1)
        self.assertEqual(c.result["exc_type"], "ProtocolError")
        self.assertIn("max_images", c.result["exc_message"])
        c = self.call("print(1)", max_image_bytes="big")
        self.assertEqual(c.result["exc_type"], "ProtocolError")

    def test_open_figures_come_back_and_close(self):
        # A stand-in for pyplot: the runtime looks for matplotlib.pyplot in
        # sys.modules and the figures in matplotlib._pylab_helpers.Gcf.
        c = self.call(
            """
            import sys, types
            PNG = %r
            class Figure:
                def __init__(self, n): self.n = n
                def savefig(self, buf, **kw): buf.write(PNG)
            class Gcf:
                managers = []
                @classmethod
                def get_all_fig_managers(cls): return list(cls.managers)
            def figure(n):
                f = Figure(n)
                Gcf.managers.append(types.SimpleNamespace(canvas=types.SimpleNamespace(figure=f)))
                return f
            def close(which):
                Gcf.managers.clear()
            sys.modules["matplotlib"] = types.ModuleType("matplotlib")
            sys.modules["matplotlib._pylab_helpers"] = types.SimpleNamespace(Gcf=Gcf)
            sys.modules["matplotlib.pyplot"] = types.SimpleNamespace(close=close, figure=figure)
            a, b = figure(1), figure(2)
            display(a)
            """
            % PNG
        )
        self.assertEqual(c.result["status"], "ok", c.result)
        self.assertEqual(len(c.images), 2, "figure 1 once (displayed), figure 2 at the end")
        c = self.call("import sys; print(len(sys.modules['matplotlib._pylab_helpers'].Gcf.managers))")
        self.assertEqual((c.stdout, c.images), ("0\n", []), "figures are closed after the call")

    def test_broken_figure_is_reported_not_fatal(self):
        c = self.call(
            """
            import sys, types
            class Bad:
                def savefig(self, buf, **kw): raise RuntimeError("no renderer")
            m = types.SimpleNamespace(canvas=types.SimpleNamespace(figure=Bad()))
            sys.modules["matplotlib._pylab_helpers"] = types.SimpleNamespace(
                Gcf=types.SimpleNamespace(get_all_fig_managers=lambda: [m]))
            sys.modules["matplotlib.pyplot"] = types.SimpleNamespace(close=lambda w: None)
            """
        )
        self.assertEqual(c.result["status"], "ok")
        self.assertIn("showing the open figures failed: RuntimeError: no renderer", c.stderr)
        for name in ("matplotlib.pyplot", "matplotlib._pylab_helpers"):
            self.call("import sys; sys.modules.pop(%r, None)" % name)

    def test_files_out_new_and_changed_only(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        os.mkdir(os.path.join(d, "sub"))
        with open(os.path.join(d, "old.txt"), "w") as f:
            f.write("old")
        self.call("import mcp_sandbox_outputs; mcp_sandbox_outputs.OUT_DIR = %r" % d)
        c = self.call(
            """
            import os
            open(%r, "w").write("hello")
            open(%r, "w").write("deep")
            os.symlink("/etc/passwd", %r)
            """
            % (os.path.join(d, "a.txt"), os.path.join(d, "sub", "b.csv"), os.path.join(d, "link"))
        )
        self.assertEqual(
            c.result.get("files"),
            [{"path": os.path.join(d, "a.txt"), "size": 5}, {"path": os.path.join(d, "sub", "b.csv"), "size": 4}],
        )
        self.assertEqual(
            c.files, {os.path.join(d, "a.txt"): b"hello", os.path.join(d, "sub", "b.csv"): b"deep"}, "sent inline"
        )
        c = self.call("print('nothing written')")
        self.assertNotIn("files", c.result)
        self.assertEqual(c.files, {})
        c = self.call("open(%r, 'a').write('!')" % os.path.join(d, "a.txt"))
        self.assertEqual(c.result.get("files"), [{"path": os.path.join(d, "a.txt"), "size": 6}])

    def test_files_out_are_bounded(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        self.call("import mcp_sandbox_outputs; mcp_sandbox_outputs.OUT_DIR = %r" % d)
        c = self.call("for i in range(130):\n    open(%r + '/f%%03d' %% i, 'w').write('x')" % d)
        self.assertEqual(len(c.result["files"]), outputs.MAX_OUT_FILES)
        self.assertEqual(c.result["dropped"].get("files"), 30)
        self.assertEqual(c.result["files"][0]["path"], os.path.join(d, "f000"))


class SniffTest(unittest.TestCase):
    def test_kinds(self):
        for data, want in (
            (PNG, "image/png"),
            (b"\xff\xd8\xff\xe0rest", "image/jpeg"),
            (b"GIF89a....", "image/gif"),
            (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
            (b"  <?xml version='1.0'?><svg/>", "image/svg+xml"),
            (b"<html>", None),
            (b"", None),
        ):
            with self.subTest(data=data[:12]):
                self.assertEqual(outputs.sniff(data), want)

    def test_snapshot_of_missing_dir(self):
        self.assertIsNone(outputs.Watch("/nonexistent/out").snapshot())
        self.assertEqual(outputs.changed(None, None), ([], 0))


if __name__ == "__main__":
    unittest.main()


class WatchTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.watch = outputs.Watch(self.dir)
        self.watch.start()

    def write(self, name, data):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(data)

    def names(self):
        files, more = self.watch.changes()
        self.assertEqual(more, 0)
        return [os.path.relpath(f["path"], self.dir) for f in files]

    def test_the_hosts_directories_are_not_files_out(self):
        for d in outputs.KEPT_DIRS + ("sub",):
            os.mkdir(os.path.join(self.dir, d))
            self.write(os.path.join(d, "f"), "x")
        self.assertEqual(self.names(), ["sub/f"])

    def test_prune_keeps_the_newest(self):
        d = os.path.join(self.dir, outputs.KEPT_DIRS[0])
        os.mkdir(d)
        for i in range(outputs.KEPT_MAX + 5):
            path = os.path.join(d, "o%02d" % i)
            with open(path, "w") as f:
                f.write("x")
            os.utime(path, ns=(i * 10**9, i * 10**9))
        outputs.prune_kept(self.dir)
        self.assertEqual(sorted(os.listdir(d)), ["o%02d" % i for i in range(5, outputs.KEPT_MAX + 5)])
        outputs.prune_kept(self.dir)  # nothing more to remove; a missing directory is no error
        self.assertEqual(len(os.listdir(d)), outputs.KEPT_MAX)

    def test_prune_removes_old_task_records_whole(self):
        d = os.path.join(self.dir, ".mcp-tasks")
        os.mkdir(d)
        for i in range(outputs.KEPT_MAX + 2):
            task = os.path.join(d, "t%02d" % i)
            os.mkdir(task)
            with open(os.path.join(task, "state"), "w") as f:
                f.write("x")
            os.utime(task, ns=(i * 10**9, i * 10**9))
        os.symlink("/etc", os.path.join(d, "link"))
        outputs.prune_kept(self.dir)
        left = sorted(os.listdir(d))
        self.assertEqual(left, ["link"] + ["t%02d" % i for i in range(2, outputs.KEPT_MAX + 2)])
        self.assertTrue(os.path.exists("/etc/passwd"))

    def test_reports_each_change_once(self):
        self.write("a.txt", "1")
        self.assertEqual(self.names(), ["a.txt"])
        self.assertEqual(self.names(), [], "unchanged since the last look")
        self.write("a.txt", "22")
        os.mkdir(os.path.join(self.dir, "sub"))
        self.write("sub/b.txt", "3")
        self.assertEqual(self.names(), ["a.txt", "sub/b.txt"])
        self.write("sub/b.txt", "44")  # the root's status does not change
        self.assertEqual(self.names(), ["sub/b.txt"])

    def test_start_keeps_the_previous_look(self):
        self.write("a.txt", "1")
        self.watch.start()  # a call's start after the first: no new baseline
        self.assertEqual(self.names(), ["a.txt"], "written between two calls, reported with the next")

    def test_settled_empty_directory_sees_a_new_file(self):
        old = outputs.SETTLE_NS
        outputs.SETTLE_NS = -(10**12)  # settle at once, whatever the clock
        self.addCleanup(setattr, outputs, "SETTLE_NS", old)
        self.assertEqual(self.names(), [])
        self.assertIsNotNone(self.watch.settled)
        self.assertEqual(self.names(), [], "settled: not walked, still empty")
        self.write("new.txt", "x")
        self.assertEqual(self.names(), ["new.txt"])
        self.assertIsNone(self.watch.settled, "not empty: walked at every look")
        os.remove(os.path.join(self.dir, "new.txt"))
        self.assertEqual(self.names(), [])
        os.mkdir(os.path.join(self.dir, "d"))
        self.assertEqual(self.names(), [])
        self.assertIsNone(self.watch.settled, "a subdirectory's files do not change the root's status")
        self.write("d/x.txt", "y")
        self.assertEqual(self.names(), ["d/x.txt"])

    def test_unsettled_directory_is_walked(self):
        old = outputs.SETTLE_NS
        outputs.SETTLE_NS = 10**18  # never settles
        self.addCleanup(setattr, outputs, "SETTLE_NS", old)
        self.assertEqual(self.names(), [])
        self.assertIsNone(self.watch.settled)
        self.write("a.txt", "1")
        self.assertEqual(self.names(), ["a.txt"])

    def test_directory_gone_or_a_link(self):
        shutil.rmtree(self.dir)
        self.assertEqual(self.watch.changes(), ([], 0))
        target = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, target)
        with open(os.path.join(target, "t.txt"), "w") as f:
            f.write("t")
        os.symlink(target, self.dir)
        self.assertEqual(self.watch.changes(), ([], 0), "a link is not followed")
        os.remove(self.dir)
        os.mkdir(self.dir)
        self.write("c.txt", "1")
        self.assertEqual(self.names(), ["c.txt"])


class InlineTest(unittest.TestCase):
    def test_small_files_and_images_within_budgets(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        files = []
        for name, size in (("a.txt", 10), ("big.csv", outputs.INLINE_MAX + 1), ("p.png", 3000), ("q.png", 3000)):
            p = os.path.join(d, name)
            with open(p, "wb") as f:
                f.write(b"x" * size)
            files.append({"path": p, "size": size})
        files.append({"path": os.path.join(d, "gone.txt"), "size": 3})
        files.append({"path": os.path.join(d, "a.txt"), "size": 11})  # changed since: skipped
        os.symlink(os.path.join(d, "a.txt"), os.path.join(d, "link.txt"))
        files.append({"path": os.path.join(d, "link.txt"), "size": 10})
        got = dict(outputs.inline(files, image_bytes=4000))
        self.assertEqual(sorted(os.path.basename(p) for p in got), ["a.txt", "p.png", "q.png"], "q.png over the image budget is still a small file")
        self.assertEqual(got[os.path.join(d, "a.txt")], b"x" * 10)
