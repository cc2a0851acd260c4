"""Rich outputs of a sandbox call: images, matplotlib figures and files out.

The host installs this module as `mcp_sandbox_outputs` ahead of the rest
of the runtime. It holds what turns Python objects into image bytes, the
matplotlib backend that shows figures as images, and the watch on the
files-out directory. It sends nothing itself: mcp_sandbox_display sends
what it produces.
Standard library only; matplotlib and PIL are used when the code has them.
"""

import importlib.abc
import importlib.util
import io
import os
import shutil
import stat
import sys
import time

# IMAGE_TYPES are the MIME types sent as image content.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
# EXTENSION_TYPES maps a file name's extension to its image type.
EXTENSION_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
}
# OUT_DIR is the directory whose new and changed files come back with a call.
OUT_DIR = "/workspace/out"
# KEPT_DIRS, under the directory watched, are where the hosts of a
# persistent sandbox keep what another bridge reads (not files out): the
# whole outputs of calls cut to the budget, and the answers to questions
# of waiting calls with what the calls answered next, the records of
# tasks (a directory each), and the servers granted to the sandbox (one
# file); KEPT_MAX of each, the newest.
KEPT_DIRS = (".mcp-outputs", ".mcp-answers", ".mcp-tasks", ".mcp-grants")
KEPT_MAX = 16
# MAX_OUT_FILES bounds the files one call reports; MAX_OUT_ENTRIES bounds
# the directory entries a snapshot looks at.
MAX_OUT_FILES = 100
MAX_OUT_ENTRIES = 10000
# SETTLE_NS is how long before a look an empty files-out directory must
# have last changed for later looks to trust its unchanged status (its
# change time's clock is coarse).
SETTLE_NS = 100_000_000
# Files out sent with the result instead of read through the engine: each
# up to INLINE_MAX bytes while they total INLINE_TOTAL, and images (by
# extension) within the call's image bytes.
INLINE_MAX = 256 << 10
INLINE_TOTAL = 1 << 20
# MAX_PATH_DISPLAY bounds a string display() considers as a file path.
MAX_PATH_DISPLAY = 4096
# BACKEND names the matplotlib backend of this module (MPLBACKEND).
BACKEND_MODULE = "mcp_sandbox_mpl_backend"
BACKEND = "module://" + BACKEND_MODULE


def sniff(data):
    """The image type of data from its first bytes, or None."""
    head = bytes(data[:16])
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and bytes(data[8:12]) == b"WEBP":
        return "image/webp"
    text = bytes(data[:4096]).lstrip()
    if text.startswith(b"<svg") or (text.startswith((b"<?xml", b"<!DOCTYPE svg", b"<!--")) and b"<svg" in text):
        return "image/svg+xml"
    return None


def as_path(obj):
    """The file path obj names, when display() should read it as one."""
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, str) and 0 < len(obj) <= MAX_PATH_DISPLAY and "\n" not in obj and "\0" not in obj:
        try:
            if os.path.isfile(obj):
                return obj
        except (OSError, ValueError):
            pass
    return None


def to_image(obj, mime=None):
    """Returns (bytes, mime) for obj as an image, or None when obj is not
    one and display() should show its text. Raises ValueError for bytes or
    a file that claim to be an image and are not a known kind."""
    if mime is not None and mime not in IMAGE_TYPES:
        raise ValueError("display: mime must be one of %s, not %r" % (", ".join(IMAGE_TYPES), mime))
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        kind = mime or sniff(data)
        if kind is None:
            raise ValueError("display: the bytes are not a PNG, JPEG, GIF, WebP or SVG image (pass mime= to say which)")
        return data, kind
    path = as_path(obj)
    if path is not None:
        with open(path, "rb") as f:
            data = f.read()
        kind = mime or sniff(data) or EXTENSION_TYPES.get(os.path.splitext(path)[1].lower())
        if kind is None:
            raise ValueError("display: %s is not a PNG, JPEG, GIF, WebP or SVG image" % path)
        return data, kind
    if callable(getattr(obj, "savefig", None)):  # a matplotlib Figure
        return figure_png(obj), "image/png"
    if type(obj).__module__.startswith("PIL.") and callable(getattr(obj, "save", None)):
        return pil_png(obj), "image/png"
    for method, kind in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg"), ("_repr_svg_", "image/svg+xml")):
        render = getattr(obj, method, None)
        if callable(render):
            data = render()
            if isinstance(data, str):
                data = data.encode("utf-8")
            if isinstance(data, (bytes, bytearray)) and data:
                return bytes(data), kind
    return None


def figure_png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def pil_png(img):
    if img.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        img = img.convert("RGBA")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def text_of(obj):
    """What display() prints for an object that is not an image."""
    return obj if isinstance(obj, str) else repr(obj)


# ------------------------------------------------------------ matplotlib


def open_figures():
    """The figures pyplot holds open, when the code imported pyplot."""
    if "matplotlib.pyplot" not in sys.modules:
        return []
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None:
        return []
    return [m.canvas.figure for m in helpers.Gcf.get_all_fig_managers()]


def close_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


BACKEND_SOURCE = """
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas
from matplotlib._pylab_helpers import Gcf
import mcp_sandbox_runtime as _runtime

FigureManager = FigureManagerBase


def show(*args, **kwargs):
    '''Shows every open figure as an image of the call's result, then closes it.'''
    for manager in Gcf.get_all_fig_managers():
        _runtime.display(manager.canvas.figure)
    Gcf.destroy_all()
"""


class BackendFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes the matplotlib backend importable by its module name, with no file."""

    def find_spec(self, name, path=None, target=None):
        if name != BACKEND_MODULE:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(BACKEND_SOURCE, "<mcp matplotlib backend>", "exec"), module.__dict__)


def install_backend():
    """Makes matplotlib draw with this module's backend in this interpreter."""
    if not any(isinstance(f, BackendFinder) for f in sys.meta_path):
        sys.meta_path.append(BackendFinder())
    os.environ["MPLBACKEND"] = BACKEND


# ------------------------------------------------------------ files out


def prune_kept(root=None):
    """Removes all but the KEPT_MAX newest files (or directories, whose
    files are removed with them) of each of KEPT_DIRS."""
    for name in KEPT_DIRS:
        d = os.path.join(root or OUT_DIR, name)
        try:
            with os.scandir(d) as it:
                kept = sorted(
                    (e.stat(follow_symlinks=False).st_mtime_ns, e.path, e.is_dir(follow_symlinks=False))
                    for e in it
                    if e.is_file(follow_symlinks=False) or e.is_dir(follow_symlinks=False)
                )
        except OSError:
            continue
        for _, p, is_dir in kept[:-KEPT_MAX]:
            try:
                if is_dir:
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)
            except OSError:
                pass


def walk(root):
    """Maps each regular file under the directory root to (mtime_ns, size,
    inode), at most MAX_OUT_ENTRIES entries looked at; symbolic links are
    neither followed nor listed."""
    files = {}
    stack = [root]
    seen = 0
    while stack and seen < MAX_OUT_ENTRIES:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for e in entries:
                seen += 1
                if seen > MAX_OUT_ENTRIES:
                    break
                try:
                    if e.is_dir(follow_symlinks=False):
                        if e.name in KEPT_DIRS and os.path.dirname(e.path) == root:
                            continue  # the host's, not files out
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        st = e.stat(follow_symlinks=False)
                        files[e.path] = (st.st_mtime_ns, st.st_size, st.st_ino)
                except OSError:
                    continue
    return files


class Watch:
    """A Watch reports the files under a directory that are new or changed
    since its previous look: a call's files out are what changed since the
    end of the call before it, so the directory is walked once per call.
    An empty directory whose status is unchanged since it settled is not
    walked again (a file made or removed in it changes its status)."""

    def __init__(self, root=None):
        self._root = root
        self.files = None
        self.looked = False
        self.settled = None

    @property
    def root(self):
        """The directory watched. Zero root: OUT_DIR, as it is at each look."""
        return self._root or OUT_DIR

    def start(self):
        """Takes the first look, once; later calls keep the previous one."""
        if not self.looked:
            self.files = self.snapshot()
            self.looked = True

    def changes(self):
        """The files new or changed since the previous look, as changed()."""
        self.start()
        after = self.snapshot()
        before, self.files = self.files, after
        return changed(before, after)

    def snapshot(self):
        """The files under root as walk maps them: None when root is absent
        or not a directory (a link is not followed), {} when it is empty and
        settled, without walking it."""
        try:
            st = os.lstat(self.root)
        except OSError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):  # absent, or a link
            self.settled = None
            return None
        key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_nlink)
        if key == self.settled:
            return {}
        now = time.time_ns()
        files = walk(self.root)
        self.settled = None
        if files == {} and now - max(st.st_ctime_ns, st.st_mtime_ns) > SETTLE_NS:
            try:
                if not os.listdir(self.root):
                    self.settled = key
            except OSError:
                pass
        return files


def changed(before, after):
    """The files of snapshot after that are new or changed since before,
    sorted, as (kept, dropped): at most MAX_OUT_FILES entries {path, size}
    are kept."""
    if after is None:
        return [], 0
    before = before or {}
    paths = sorted(p for p, st in after.items() if before.get(p) != st)
    kept = [{"path": p, "size": after[p][1]} for p in paths[:MAX_OUT_FILES]]
    return kept, len(paths) - len(kept)


def read_inline(path, size):
    """The bytes of the regular file at path when it still has size bytes;
    None otherwise. A symbolic link is not followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (st.st_mode & 0o170000 == 0o100000) or st.st_size != size:
            return None
        chunks, left = [], size + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) == size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def inline(files, image_bytes):
    """Yields (path, bytes) of the files worth sending with the result:
    small files while they total INLINE_TOTAL, and images within
    image_bytes."""
    total = 0
    for f in files:
        path, size = f["path"], f["size"]
        is_image = os.path.splitext(path)[1].lower() in EXTENSION_TYPES
        if is_image and size <= image_bytes:
            image_bytes -= size
        elif size <= INLINE_MAX and total + size <= INLINE_TOTAL:
            total += size
        else:
            continue
        data = read_inline(path, size)
        if data is not None:
            yield path, data
