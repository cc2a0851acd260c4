package packages

import (
	"testing"
)

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
