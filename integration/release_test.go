//go:build integration

package integration

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// releaseDistEnv names the dist directory of a snapshot release
// (scripts/release --snapshot) for TestReleaseArchives; scripts/test makes
// one and sets it.
const releaseDistEnv = "MCP_TEST_RELEASE_DIST"

// releaseBinary is the command's name in every archive.
const releaseBinary = "mcp-server-code-execution-mode"

// A releaseTarget is one archive of the release: its platform, and how
// its binary must look.
type releaseTarget struct {
	goos, goarch string
	check        func(path string) error
}

// releaseTargets are the four archives the release makes.
var releaseTargets = []releaseTarget{
	{"linux", "amd64", elfMachine(elf.EM_X86_64)},
	{"linux", "arm64", elfMachine(elf.EM_AARCH64)},
	{"darwin", "amd64", machoCPU(macho.CpuAmd64)},
	{"darwin", "arm64", machoCPU(macho.CpuArm64)},
}

// elfMachine checks that a file is a Linux executable for machine m.
func elfMachine(m elf.Machine) func(string) error {
	return func(path string) error {
		f, err := elf.Open(path)
		if err != nil {
			return fmt.Errorf("not an ELF executable: %w", err)
		}
		defer f.Close()
		if f.Machine != m || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
			return fmt.Errorf("ELF %v %v, want an executable for %v", f.Type, f.Machine, m)
		}
		return nil
	}
}

// machoCPU checks that a file is a macOS executable for cpu.
func machoCPU(cpu macho.Cpu) func(string) error {
	return func(path string) error {
		f, err := macho.Open(path)
		if err != nil {
			return fmt.Errorf("not a Mach-O executable: %w", err)
		}
		defer f.Close()
		if f.Cpu != cpu || f.Type != macho.TypeExec {
			return fmt.Errorf("Mach-O %v %v, want an executable for %v", f.Type, f.Cpu, cpu)
		}
		return nil
	}
}

// TestReleaseArchives checks a snapshot release as a user gets it: every
// archive is listed in checksums.txt with its real digest, holds the
// binary, the LICENSE and the README, for the right platform, with an SBOM
// that names the modules linked in; then the linux/amd64 archive is
// unpacked into an empty directory and run there: its version names the
// engines compiled in, a first call answers on whichever engine it finds
// (none forced), and `setup claude-code` registers it with the real
// Claude Code CLI, as TestSetupClaudeCode does with the test's build.
func TestReleaseArchives(t *testing.T) {
	dist := os.Getenv(releaseDistEnv)
	if dist == "" {
		t.Skipf("%s is not set: scripts/test sets it after scripts/release --snapshot", releaseDistEnv)
	}
	sums := readChecksums(t, filepath.Join(dist, "checksums.txt"))
	var native string
	for _, target := range releaseTargets {
		matches, _ := filepath.Glob(filepath.Join(dist, fmt.Sprintf("%s_*_%s_%s.tar.gz", releaseBinary, target.goos, target.goarch)))
		if len(matches) != 1 {
			t.Fatalf("%s/%s: want one archive in %s, found %v", target.goos, target.goarch, dist, matches)
		}
		archive := matches[0]
		if want, ok := sums[filepath.Base(archive)]; !ok || want != sha256File(t, archive) {
			t.Errorf("%s: checksums.txt says %q, the file's digest is %s", filepath.Base(archive), want, sha256File(t, archive))
		}
		dir := t.TempDir()
		names := untar(t, archive, dir)
		for _, want := range []string{releaseBinary, "LICENSE", "README.md"} {
			if !names[want] {
				t.Errorf("%s lacks %s (has %v)", filepath.Base(archive), want, names)
			}
		}
		if err := target.check(filepath.Join(dir, releaseBinary)); err != nil {
			t.Errorf("%s: %v", filepath.Base(archive), err)
		}
		checkSBOM(t, strings.TrimSuffix(archive, ".tar.gz")+".cdx.json")
		if target.goos == "linux" && target.goarch == "amd64" {
			native = filepath.Join(dir, releaseBinary)
		}
	}
	if native == "" {
		t.Fatal("no linux/amd64 binary to run")
	}

	out, err := exec.Command(native, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "engines: docker, podman, kubernetes") || !strings.Contains(string(out), "snapshot") {
		t.Fatalf("version from the archive: %q %v", out, err)
	}
	home := t.TempDir()
	cmd := exec.Command(native, "exec", "-c", "print(6 * 7)")
	cmd.Dir = t.TempDir()
	cmd.Env = append(envWithout("MCP_BRIDGE_RUNTIME", "HOME"), "HOME="+home)
	began := time.Now()
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "42") {
		t.Fatalf("a first call from the archive's binary: %q %v", out, err)
	}
	t.Logf("a first call from the unpacked archive answered in %v", time.Since(began).Round(time.Millisecond))

	// The README's path from here: register with Claude Code, which
	// connects; a client starts what setup wrote and a first call answers.
	setupClaudeCodeFlow(t, native, nil)
}

// readChecksums reads a goreleaser checksums.txt: file name → sha256 hex.
func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the checksums: %v", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("checksums.txt: malformed line %q", line)
		}
		out[name] = sum
	}
	return out
}

// sha256File returns the hex SHA-256 of the file at path.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// untar unpacks the regular files of the tar.gz at path into dir (no
// path may leave it) and returns their names.
func untar(t *testing.T, path, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("%s: an entry outside the archive's directory: %q", path, h.Name)
		}
		dst := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
		names[name] = true
	}
}

// checkSBOM checks that the CycloneDX document at path describes a Go
// binary that links the MCP SDK and the Podman bindings.
func checkSBOM(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("the SBOM: %v", err)
		return
	}
	var bom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name string `json:"name"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &bom); err != nil || bom.BOMFormat != "CycloneDX" {
		t.Errorf("%s: not a CycloneDX JSON document (%v)", filepath.Base(path), err)
		return
	}
	have := map[string]bool{}
	for _, c := range bom.Components {
		have[c.Name] = true
	}
	for _, want := range []string{"github.com/modelcontextprotocol/go-sdk", "github.com/containers/podman/v5"} {
		if !have[want] {
			t.Errorf("%s: no component %s among %d", filepath.Base(path), want, len(bom.Components))
		}
	}
}
