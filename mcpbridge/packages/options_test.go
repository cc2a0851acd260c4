package packages

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestWheelOrder(t *testing.T) {
	paths := []string{"/w/pip-23.0.1-py3-none-any.whl", "/w/pip-9.0.3-py2.py3-none-any.whl", "/w/pip-23.10-py3-none-any.whl", "/w/pip-23.2rc1-py3-none-any.whl"}
	slices.SortFunc(paths, compareWheelVersions)
	if got := strings.Join(paths, " "); got != "/w/pip-9.0.3-py2.py3-none-any.whl /w/pip-23.0.1-py3-none-any.whl /w/pip-23.2rc1-py3-none-any.whl /w/pip-23.10-py3-none-any.whl" {
		t.Fatalf("order: %s", got)
	}
	if w, err := (&Options{PipWheel: "/x/pip.whl"}).Wheel(); w != "/x/pip.whl" || err != nil {
		t.Fatalf("a set wheel: %q %v", w, err)
	}
	dir := t.TempDir()
	defer func(g string) { pipWheelGlob = g }(pipWheelGlob)
	pipWheelGlob = dir + "/pip-*.whl"
	if _, err := (&Options{}).Wheel(); err == nil || !strings.Contains(err.Error(), "python3-pip-whl") {
		t.Fatalf("no wheel: %v", err)
	}
	for _, v := range []string{"9.0.1", "23.0.1"} {
		os.WriteFile(dir+"/pip-"+v+"-py3-none-any.whl", []byte("PK"), 0o644)
	}
	if w, err := (&Options{}).Wheel(); err != nil || w != dir+"/pip-23.0.1-py3-none-any.whl" {
		t.Fatalf("the newest of two: %q %v", w, err)
	}
}

func TestCheckIndexURL(t *testing.T) {
	for _, ok := range []string{"https://pypi.org/simple/", "http://127.0.0.1:8080/simple", "https://[::1]:443/x/"} {
		if err := CheckIndexURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "pypi.org/simple", "file:///srv/simple", "https:///simple", "https://u:p@x/simple", "https://x/simple?a=1", "https://x/simple#f", "https://x y/"} {
		if err := CheckIndexURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckFileHost(t *testing.T) {
	for in, want := range map[string]string{
		"files.example.org":  "files.example.org:443",
		"Files.Example.org":  "files.example.org:443",
		"10.0.0.5:8443":      "10.0.0.5:8443",
		"[2001:db8::1]:443":  "[2001:db8::1]:443",
		"[2001:db8::1]":      "[2001:db8::1]:443",
		"127.0.0.1:8080":     "127.0.0.1:8080",
		"cdn.example.org:80": "cdn.example.org:80",
	} {
		if got, err := CheckFileHost(in); err != nil || got != want {
			t.Errorf("CheckFileHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "https://files.example.org", "files.example.org/x", "u@files.example.org", "x:0", "x:70000", "x:http", "2001:db8::1", "[x]:443"} {
		if got, err := CheckFileHost(bad); err == nil {
			t.Errorf("%q accepted as %q", bad, got)
		}
	}
}
