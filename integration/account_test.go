//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An account is a new unprivileged user of this machine, made for one
// test (useradd -m, which also gives it subordinate ids) and removed with
// everything it ran and wrote when the test ends: what a laptop's user
// is, as far as the engines can tell.
type account struct {
	name     string
	uid, gid uint32
	groups   []uint32
	home     string
	// runtime is its XDG_RUNTIME_DIR (/run/user/UID, mode 0700), as a
	// login session would make it.
	runtime string
}

// newAccount makes an account, a member of groups besides its own.
func newAccount(t *testing.T, groups ...string) *account {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a user needs root")
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "mcpit" + hex.EncodeToString(b)
	args := []string{"-m", "-s", "/bin/sh"}
	if len(groups) > 0 {
		args = append(args, "-G", strings.Join(groups, ","))
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v %s", name, err, out)
	}
	a := &account{name: name}
	t.Cleanup(a.remove(t))
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	a.uid, a.gid, a.home = uint32(uid), uint32(gid), u.HomeDir
	ids, _ := u.GroupIds()
	for _, g := range ids {
		n, _ := strconv.Atoi(g)
		a.groups = append(a.groups, uint32(n))
	}
	a.runtime = filepath.Join("/run/user", u.Uid)
	if err := os.MkdirAll(a.runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	a.chown(t, a.runtime)
	return a
}

// remove returns the clean-up: every process of the account killed, its
// runtime directory and the account with its home removed.
func (a *account) remove(t *testing.T) func() {
	return func() {
		for try := 0; try < 50; try++ {
			if exec.Command("pkill", "-KILL", "-u", a.name).Run() != nil {
				break // none left (pkill exits 1)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if a.runtime != "" {
			os.RemoveAll(a.runtime)
		}
		if out, err := exec.Command("userdel", "-r", a.name).CombinedOutput(); err != nil && !strings.Contains(string(out), "mail spool") {
			t.Logf("userdel %s: %v %s", a.name, err, out)
		}
	}
}

// chown gives path to the account.
func (a *account) chown(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, int(a.uid), int(a.gid)); err != nil {
		t.Fatal(err)
	}
}

// path returns the path rel in the account's home.
func (a *account) path(rel string) string { return filepath.Join(a.home, rel) }

// mkdir makes the directory rel (and its parents) in the account's home,
// owned by it, and returns its path.
func (a *account) mkdir(t *testing.T, rel string) string {
	t.Helper()
	p := a.home
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		p = filepath.Join(p, part)
		if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		a.chown(t, p)
	}
	return p
}

// writeFile writes content at rel in the account's home, owned by it
// (mode 0600), and returns its path.
func (a *account) writeFile(t *testing.T, rel string, content []byte) string {
	t.Helper()
	a.mkdir(t, filepath.Dir(rel))
	p := a.path(rel)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	a.chown(t, p)
	return p
}

// install copies the executable at src into the account's ~/bin and
// returns its path there: the test's build is in a directory only root
// reads.
func (a *account) install(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := a.writeFile(t, filepath.Join("bin", filepath.Base(src)), data)
	os.Chmod(p, 0o755)
	return p
}

// env returns the environment of the account's processes: the test's
// less what points at root's engines and files, with its own HOME, user
// and runtime directory; more added (later entries win).
func (a *account) env(more ...string) []string {
	env := envWithout("HOME", "USER", "LOGNAME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
		"CONTAINER_HOST", "CONTAINER_CONNECTION", "DOCKER_HOST", "DOCKER_CONFIG", "KUBECONFIG", "MCP_BRIDGE_RUNTIME", "TMPDIR",
		"MCP_BRIDGE_STATE_DIR", "MCP_SERVERS_CONFIG", "MCP_BRIDGE_ENGINES", "MCP_BRIDGE_OCI_RUNTIME", "MCP_BRIDGE_LOG_LEVEL")
	return append(append(env, "HOME="+a.home, "USER="+a.name, "LOGNAME="+a.name, "XDG_RUNTIME_DIR="+a.runtime), more...)
}

// command returns name with args run as the account in its home, with
// its environment and more.
func (a *account) command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}}
	cmd.Env, cmd.Dir = a.env(env...), a.home
	return cmd
}

// connectBridge starts the bridge at bin (the account's copy) as the
// account with env added, and connects the go-sdk's client to it; its
// stderr goes to stderr (nil: the test's).
func (a *account) connectBridge(t *testing.T, bin string, stderr io.Writer, env ...string) *mcp.ClientSession {
	t.Helper()
	cmd := a.command(context.Background(), append([]string{"MCP_BRIDGE_LOG_LEVEL=WARN"}, env...), bin, "run")
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
