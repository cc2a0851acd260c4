package packages

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// installCode runs pip in the installer container and prints an
// installResult: %[1]s is the install directory, %[2]s pip's arguments
// after "pip" (a JSON list), %[3]d the seconds pip may take, %[4]s the
// path of the pip wheel the host delivered ("" when none was: the
// image's own pip runs, in isolated mode, or the result asks for the
// wheel). pip reads no configuration file of the image.
const installCode = `import json, os, subprocess, sys
def install(pip):
    site = %[1]q
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1", PIP_CONFIG_FILE=os.devnull)
    try:
        p = subprocess.run(pip + %[2]s, capture_output=True, text=True, env=env, timeout=%[3]d)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "ERROR: pip did not finish within %[3]d s"
    size = 0
    for root, _, files in os.walk(site):
        for f in files:
            try:
                size += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return {"rc": rc, "stdout": out[-8000:], "stderr": err[-8000:], "bytes": size}
wheel = %[4]q
if wheel:
    r = install([sys.executable, wheel + "/pip"])
elif subprocess.run([sys.executable, "-I", "-c", "import pip"], capture_output=True).returncode == 0:
    r = dict(install([sys.executable, "-I", "-m", "pip"]), image_pip=True)
else:
    r = {"need_wheel": True}
r["python"] = sys.version.split()[0]
print(json.dumps(r))`

// installTimeout bounds one install of a set.
const installTimeout = 15 * time.Minute

// ErrInstall reports a package set that could not be installed.
var ErrInstall = errors.New("installing the package set failed")

// pipArgs returns pip's arguments (after "pip") for an install into
// target of the requirements file reqs.
func (o *Options) pipArgs(target, reqs string) []string {
	return append(o.installOptions(target), "-r", reqs)
}

// InstallArgs returns pip's arguments (after "pip") for a live install of
// reqs into target: the indexes, wheels only unless builds are allowed.
func (o *Options) InstallArgs(target string, reqs []Requirement) []string {
	args := o.installOptions(target)
	for _, r := range reqs {
		args = append(args, r.String())
	}
	return args
}

// installOptions returns "install" and its options for an install into
// target: no prompts, cache or version check, the indexes, and wheels
// only unless builds are allowed.
func (o *Options) installOptions(target string) []string {
	args := []string{"install", "--no-input", "--no-cache-dir", "--disable-pip-version-check",
		"--progress-bar", "off", "--target", target, "--index-url", o.Index()}
	for _, x := range o.ExtraIndexURLs {
		args = append(args, "--extra-index-url", x)
	}
	if !o.AllowSdist {
		args = append(args, "--only-binary=:all:")
	}
	return args
}

// requirementsText returns the set as a requirements file.
func (o *Options) requirementsText() string {
	var b strings.Builder
	for _, r := range o.Requirements {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

// installResult is what the installer's code prints.
type installResult struct {
	// NeedWheel: the image has no pip and the host delivered none.
	NeedWheel bool `json:"need_wheel"`
	// ImagePip: the image's own pip ran.
	ImagePip bool   `json:"image_pip"`
	RC       int    `json:"rc"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Bytes    int64  `json:"bytes"`
	Python   string `json:"python"`
}

// pipFailure says why pip failed: its ERROR lines (or its last lines),
// with the set named.
func (o *Options) pipFailure(r installResult) error {
	var lines []string
	for l := range strings.SplitSeq(r.Stderr, "\n") {
		if strings.HasPrefix(l, "ERROR:") {
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "ERROR:")))
		}
	}
	if len(lines) == 0 {
		all := strings.Split(strings.TrimSpace(r.Stderr+"\n"+r.Stdout), "\n")
		lines = all[max(0, len(all)-3):]
	}
	var names []string
	for _, q := range o.Requirements {
		names = append(names, q.String())
	}
	return fmt.Errorf("%w (%s): pip exited with %d: %s", ErrInstall, cut(strings.Join(names, " "), 200), r.RC, strings.Join(lines, "; "))
}
