package packages

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Labels of a package set's volumes, besides engine.LabelPackages (the
// set's key).
const (
	// labelSite names the directory of the data volume that holds the
	// complete install (on the marker volume).
	labelSite = engine.LabelPackages + ".site"
	// labelPython is the Python version the set was installed for.
	labelPython = engine.LabelPackages + ".python"
	// labelBytes is the size of the installed set.
	labelBytes = engine.LabelPackages + ".bytes"
	// labelRole is "data", "marker" or "lock".
	labelRole = engine.LabelPackages + ".role"
	// labelOwner is the token of the install holding a lock volume.
	labelOwner = engine.LabelPackages + ".owner"
)

// volumeNames returns the data and marker volumes of the set key.
func volumeNames(key string) (data, marker string) {
	return "mcp-pkgs-" + key, "mcp-pkgs-" + key + "-ok"
}

// validSite reports whether site is a directory name an install makes.
func validSite(site string) bool {
	rest, ok := strings.CutPrefix(site, "site-")
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// randomSite returns a new install directory's name.
func randomSite() string {
	var b [8]byte
	rand.Read(b[:])
	return "site-" + hex.EncodeToString(b[:])
}

// dirTar returns a tar stream of one directory, name, owned by uid:gid
// with mode 0755: what the engine extracts to make a directory the
// sandbox user may write in a volume whose root belongs to root.
func dirTar(name string, uid, gid int) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: time.Unix(0, 0)})
	tw.Close()
	return &buf
}

// filesTar returns a tar stream of regular files (name → content), owned
// by root, mode 0644.
func filesTar(files map[string][]byte) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)})
		tw.Write(data)
	}
	tw.Close()
	return &buf
}

// userIDs returns the uid and gid of a "uid:gid" user (65534:65534 when
// empty).
func userIDs(user string) (int, int) {
	if user == "" {
		return 65534, 65534
	}
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil {
		return 65534, 65534
	}
	return uid, gid
}
