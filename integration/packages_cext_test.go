//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// cextSource is a C extension module, mcpcext, with one function: add.
const cextSource = `#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a + b);
}
static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "mcpcext", NULL, -1, methods};
PyMODINIT_FUNC PyInit_mcpcext(void) { return PyModule_Create(&mod); }
`

// cextWheel compiles mcpcext for CPython 3.minor with gcc and Debian's
// Python headers and returns its wheel's file name and content; it skips
// the test when the headers are missing.
func cextWheel(t *testing.T, minor int) (string, []byte) {
	t.Helper()
	include := fmt.Sprintf("/usr/include/python3.%d", minor)
	if _, err := os.Stat(filepath.Join(include, "Python.h")); err != nil {
		t.Skipf("no headers for the image's Python 3.%d at %s (scripts/provision installs Debian's python3.11-dev for its images)", minor, include)
	}
	dir := t.TempDir()
	so := fmt.Sprintf("mcpcext.cpython-3%d-x86_64-linux-gnu.so", minor)
	os.WriteFile(filepath.Join(dir, "mcpcext.c"), []byte(cextSource), 0o644)
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-I"+include, "-o", filepath.Join(dir, so), filepath.Join(dir, "mcpcext.c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling the extension: %v\n%s", err, out)
	}
	lib, err := os.ReadFile(filepath.Join(dir, so))
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("cp3%d-cp3%d-linux_x86_64", minor, minor)
	return "mcpcext-1.0-" + tag + ".whl", buildWheel(t, "mcpcext", tag, map[string][]byte{so: lib})
}

// TestPackagesCExtension: a package with a C extension, compiled for the
// image's Python, loads from a mounted set (a read-only volume) and from
// a live install (the session's tmpfs): neither is mounted noexec. On
// every engine, and under gVisor.
func TestPackagesCExtension(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, name string, more ...string) {
		takePackageVolumes(t, name)
		probe := connectBridge(t, name, more...)
		text, isErr := runPython(t, probe, map[string]any{"code": "import sys\nprint(sys.version_info[1])"})
		var minor int
		if _, err := fmt.Sscan(text, &minor); isErr || err != nil {
			t.Fatalf("the image's Python: %q", text)
		}
		probe.Close()
		file, wheel := cextWheel(t, minor)
		ix := newTestIndex(t, map[string][]byte{file: wheel})
		index := "MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"
		set := connectBridge(t, name, append([]string{index, "MCP_BRIDGE_PACKAGES=mcpcext"}, more...)...)
		if text, isErr := runPython(t, set, map[string]any{"code": "import mcpcext\nprint(mcpcext.add(2, 3), mcpcext.__file__.startswith('/opt/mcp-packages/'))", "timeout": 60}); isErr || text != "5 True" {
			t.Errorf("from the set: %q", text)
		}
		live := connectBridge(t, name, append([]string{index}, more...)...)
		if text, isErr := runPython(t, live, map[string]any{"code": "from mcp import runtime\nruntime.install_sync('mcpcext')\nimport mcpcext\nprint(mcpcext.add(40, 2), mcpcext.__file__.startswith('/opt/mcp-site/'))", "timeout": 120}); isErr || text != "42 True" {
			t.Errorf("from a live install: %q", text)
		}
	}
	forEachEngine(t, func(t *testing.T, e testEngine) { run(t, e.Name()) })
	if _, err := exec.LookPath("runsc"); err == nil && slices.Contains(engineNames(), "docker") {
		t.Run("docker+runsc", func(t *testing.T) { run(t, "docker", "MCP_BRIDGE_OCI_RUNTIME=runsc") })
	}
}
