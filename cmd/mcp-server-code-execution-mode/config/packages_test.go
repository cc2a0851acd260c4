package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPackageSettings(t *testing.T) {
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "requirements.txt")
	os.WriteFile(reqFile, []byte("# the team's set\nnumpy>=1.20,<2\n"+`tomli; python_version < "3.11"`+"\n"), 0o644)
	wheel := filepath.Join(dir, "pip-24.0-py3-none-any.whl")
	os.WriteFile(wheel, []byte("PK"), 0o644)

	c, err := Load(envOf(map[string]string{
		EnvPackages: "pandas  numpy>=1.20,<2", EnvPipIndexURL: "http://127.0.0.1:8080/simple/",
		EnvPipExtraIndex: "https://a.example/simple/, https://b.example/simple/", EnvPipAllowSdist: "1",
		EnvPackagesCache: "20g", EnvPackagesSession: "64m", EnvPipWheel: wheel, EnvPipFileHosts: "files.example.org, 10.0.0.5:8443",
	}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Bridge.Packages
	if len(p.Requirements) != 2 || p.Requirements[0].String() != "numpy>=1.20,<2" || p.Requirements[1].String() != "pandas" ||
		p.Index() != "http://127.0.0.1:8080/simple/" || len(p.ExtraIndexURLs) != 2 || !p.AllowSdist ||
		p.CacheMax() != 20<<30 || p.SessionMax() != 64<<20 || p.PipWheel != wheel ||
		strings.Join(p.ExtraFileHosts, " ") != "files.example.org:443 10.0.0.5:8443" {
		t.Fatalf("package settings: %+v", p)
	}
	c, err = Load(envOf(map[string]string{EnvPackagesFile: reqFile}))
	if err != nil || len(c.Bridge.Packages.Requirements) != 2 || c.Bridge.Packages.Requirements[1].Marker != `python_version < "3.11"` {
		t.Fatalf("from a file: %+v, %v", c.Bridge.Packages, err)
	}
	// Defaults.
	c, err = Load(envOf(nil))
	if err != nil || c.Bridge.Packages.Requirements != nil || c.Bridge.Packages.Index() != "https://pypi.org/simple/" || c.Bridge.Packages.AllowSdist ||
		c.Bridge.Packages.CacheMax() != 10<<30 || c.Bridge.Packages.SessionMax() != 256<<20 {
		t.Fatalf("defaults: %+v, %v", c.Bridge.Packages, err)
	}

	os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("numpy\n--index-url https://evil.example/simple\n"), 0o644)
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvPackages: "numpy", EnvPackagesFile: reqFile}, "both set"},
		{map[string]string{EnvPackages: "numpy -e ."}, EnvPackages},
		{map[string]string{EnvPackages: "pkg@https://x/p.whl"}, "URLs are not allowed"},
		{map[string]string{EnvPackagesFile: filepath.Join(dir, "bad.txt")}, "line 2"},
		{map[string]string{EnvPackagesFile: filepath.Join(dir, "missing.txt")}, EnvPackagesFile},
		{map[string]string{EnvPipIndexURL: "ftp://x/simple"}, "http:// or https://"},
		{map[string]string{EnvPipIndexURL: "https://user:secret@pypi.internal/simple/"}, "inject rule"},
		{map[string]string{EnvPipExtraIndex: "https://a.example/simple/?x=1"}, "no query"},
		{map[string]string{EnvPipAllowSdist: "maybe"}, EnvPipAllowSdist},
		{map[string]string{EnvPipFileHosts: "https://files.example.org/"}, EnvPipFileHosts},
		{map[string]string{EnvPackagesCache: "1k"}, EnvPackagesCache},
		{map[string]string{EnvPipWheel: filepath.Join(dir, "nothing.whl")}, EnvPipWheel},
	} {
		if _, err := Load(envOf(tt.env)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v; want an error saying %q", tt.env, err, tt.want)
		}
	}
	// The error does not repeat the password.
	if _, err := Load(envOf(map[string]string{EnvPipIndexURL: "https://user:s3cret@pypi.internal/simple/"})); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an index URL with a password: %v", err)
	}
}
