package packages

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"numpy", "numpy"},
		{"  Django  ", "django"},
		{"zope.interface", "zope-interface"},
		{"Foo__Bar-baz", "foo-bar-baz"},
		{"numpy>=1.20,<2", "numpy>=1.20,<2"},
		{"numpy >= 1.20 , < 2", "numpy>=1.20,<2"},
		{"requests[socks,Security]==2.32.3", "requests[security,socks]==2.32.3"},
		{"requests [socks] (>=2)", "requests[socks]>=2"},
		{"pkg==1.2.*", "pkg==1.2.*"},
		{"pkg===1.0+local", "pkg===1.0+local"},
		{"pkg~=1.4.2", "pkg~=1.4.2"},
		{"pkg!=1!2.0", "pkg!=1!2.0"},
		{`tomli; python_version < "3.11"`, `tomli; python_version < "3.11"`},
		{`pywin32 ; sys_platform=='win32' and (platform_machine == "x86" or extra == 'a')`,
			`pywin32; sys_platform == 'win32' and ( platform_machine == "x86" or extra == 'a' )`},
		{`pkg; "linux" not in sys_platform`, `pkg; "linux" not in sys_platform`},
	} {
		r, err := Parse(tt.in)
		if err != nil || r.String() != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tt.in, r.String(), err, tt.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ in, why string }{
		{"", "empty"},
		{"--index-url=https://evil.example/simple", "pip options"},
		{"-e .", "pip options"},
		{"-r other.txt", "pip options"},
		{"--extra-index-url https://x", "pip options"},
		{"pkg @ https://example.com/pkg.whl", "URLs"},
		{"https://example.com/pkg.whl", "URLs"},
		{"git+https://github.com/x/y", "URLs"},
		{"./local/dir", "paths"},
		{"/abs/pkg.whl", "paths"},
		{"pkg.whl/../x", "paths"},
		{"~user/pkg", "paths"},
		{"numpy; rm -rf /", "marker"},
		{"numpy && rm -rf /", "characters"},
		{"numpy`id`", "characters"},
		{"numpy$(id)", "characters"},
		{"numpy | sh", "characters"},
		{"numpy\nrequests", "characters"},
		{"numpy>=1 --hash=sha256:00", "version specifier"},
		{"numpy>>1", "version specifier"},
		{"numpy>=", "version specifier"},
		{"numpy[", "extras"},
		{"numpy[a b]", "extra"},
		{"[extra]", "project name"},
		{`pkg; python_version < "3.11`, "not closed"},
		{`pkg; python_version <`, "ends too early"},
		{`pkg; os.system("x") == "0"`, "neither a marker variable"},
		{`pkg; python_version < "3" foo`, "should end"},
		{strings.Repeat("a", 1001), "over 1000 bytes"},
	} {
		_, err := Parse(tt.in)
		if !errors.Is(err, ErrRequirement) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("Parse(%q): %v; want ErrRequirement saying %q", tt.in, err, tt.why)
		}
	}
}

func TestParseList(t *testing.T) {
	reqs, err := ParseList("  pandas numpy>=1.20,<2\tPandas  requests[socks]\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.String())
	}
	if strings.Join(got, " ") != "numpy>=1.20,<2 pandas requests[socks]" {
		t.Fatalf("ParseList: %q", got)
	}
	if _, err := ParseList("numpy --index-url=http://127.0.0.1/"); !errors.Is(err, ErrRequirement) || !strings.Contains(err.Error(), "--index-url") {
		t.Fatalf("an option among requirements: %v", err)
	}
	if _, err := ParseList(strings.Repeat("p ", MaxRequirements+1)); !errors.Is(err, ErrRequirement) {
		t.Fatalf("too many: %v", err)
	}
	if reqs, err := ParseList(""); err != nil || len(reqs) != 0 {
		t.Fatalf("none: %v %v", reqs, err)
	}
}

func TestParseFile(t *testing.T) {
	const h1 = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const h2 = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	reqs, err := ParseFile("# data\nnumpy>=1.20,<2  # pinned below 2\n\n" +
		`tomli; python_version < "3.11"` + "\r\n" +
		"requests==2.32.3 \\\n    --hash=" + h2 + " \\\n    --hash " + h1 + "\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.String())
	}
	want := []string{"numpy>=1.20,<2", "requests==2.32.3 --hash=" + h1 + " --hash=" + h2, `tomli; python_version < "3.11"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ParseFile:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tt := range []struct{ file, why string }{
		{"numpy\n-r other.txt\n", "line 2"},
		{"numpy\n\n--index-url https://evil.example/simple\n", "line 3"},
		{"numpy --hash=md5:abc\n", "not a --hash"},
		{"numpy --hash\n", "not a --hash"},
		{"-e git+https://x/y\n", "line 1"},
	} {
		if _, err := ParseFile(tt.file); !errors.Is(err, ErrRequirement) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("ParseFile(%q): %v; want ErrRequirement saying %q", tt.file, err, tt.why)
		}
	}
}

// FuzzParse: Parse never panics, what it accepts has no character pip
// would read as an option, a URL or a path, and its canonical form parses
// to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"numpy", "numpy>=1.20,<2", "requests[socks]==2.32.3", `tomli; python_version < "3.11"`,
		"-e .", "pkg @ https://x", "a; (extra == 'x' or os_name != \"nt\")"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		c := r.String()
		body, _, _ := strings.Cut(c, ";")
		if strings.HasPrefix(c, "-") || strings.ContainsAny(body, "@/\\") || strings.ContainsAny(c, "\n\r`$|&") {
			t.Fatalf("Parse(%q) accepted %q", s, c)
		}
		again, err := Parse(c)
		if err != nil || again.String() != c {
			t.Fatalf("Parse(%q) = %q, which parses to %q, %v", s, c, again.String(), err)
		}
	})
}
