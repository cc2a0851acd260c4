package kube

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// runTarIn runs the extractor of the input container (lifecycle.TarIn) on the
// tar of build, into a new directory, as the sandbox user would: as uid
// 65534 when the test runs as root. It returns the directory and the
// extractor's error with its standard error.
func runTarIn(t *testing.T, build func(tw *tar.Writer)) (string, error) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if os.Getuid() == 0 {
		// Root's python3 may live where uid 65534 cannot reach it.
		py, err = "/usr/bin/python3", nil
		if _, serr := os.Stat(py); serr != nil {
			err = serr
		}
	}
	if err != nil {
		t.Skip("no python3 for the sandbox user on this host")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	build(tw)
	tw.Close()
	top, err := os.MkdirTemp("", "kube-tar-in-") // reachable by the sandbox user
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(top, func(p string, _ fs.DirEntry, _ error) error { os.Chmod(p, 0o755); return nil })
		os.RemoveAll(top)
	})
	dir := filepath.Join(top, "in")
	os.Mkdir(dir, 0o777)
	os.Chmod(top, 0o777)
	os.Chmod(dir, 0o777)
	cmd := exec.Command(py, "-I", "-S", "-c", lifecycle.TarIn, dir)
	cmd.Stdin = &buf
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	if err := cmd.Run(); err != nil {
		return dir, errors.New(err.Error() + ": " + stderr.String())
	}
	return dir, nil
}

// writeEntry writes h, with body for a regular file, to tw.
func writeEntry(tw *tar.Writer, h *tar.Header, body string) {
	h.Size = int64(len(body))
	if h.Typeflag != tar.TypeReg {
		h.Size = 0
	}
	tw.WriteHeader(h)
	io.WriteString(tw, body)
}

// TestKubeTarIn: the input container's extractor writes read-only files
// into read-only directories as the sandbox user, and refuses links,
// special files, absolute names and "..".
func TestKubeTarIn(t *testing.T) {
	dir, err := runTarIn(t, func(tw *tar.Writer) {
		writeEntry(tw, &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o555}, "")
		writeEntry(tw, &tar.Header{Name: "d/a.txt", Typeflag: tar.TypeReg, Mode: 0o444}, "hello")
		writeEntry(tw, &tar.Header{Name: "d/e/", Typeflag: tar.TypeDir, Mode: 0o555}, "")
		writeEntry(tw, &tar.Header{Name: "d/e/b", Typeflag: tar.TypeReg, Mode: 0o4755}, "b")
		writeEntry(tw, &tar.Header{Name: "./top", Typeflag: tar.TypeReg, Mode: 0o444}, "top")
	})
	if err != nil {
		t.Fatalf("a tar as the session writes it: %v", err)
	}
	for p, want := range map[string]struct {
		mode fs.FileMode
		body string
	}{
		"d": {fs.ModeDir | 0o555, ""}, "d/a.txt": {0o444, "hello"}, "d/e": {fs.ModeDir | 0o555, ""}, "d/e/b": {0o755, "b"}, "top": {0o444, "top"},
	} {
		st, err := os.Stat(filepath.Join(dir, p))
		if err != nil || st.Mode() != want.mode {
			t.Errorf("%s: %v %v, want mode %v", p, st.Mode(), err, want.mode)
			continue
		}
		if !st.IsDir() {
			if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != want.body {
				t.Errorf("%s: %q, want %q", p, b, want.body)
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "*.mcp-partial")); len(m) > 0 {
		t.Errorf("partial files left: %v", m)
	}
	for _, tc := range []struct {
		name string
		h    tar.Header
		want string
	}{
		{"symbolic link", tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, "not a directory or regular file"},
		{"hard link", tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "top"}, "not a directory or regular file"},
		{"device", tar.Header{Name: "c", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}, "not a directory or regular file"},
		{"fifo", tar.Header{Name: "f", Typeflag: tar.TypeFifo}, "not a directory or regular file"},
		{"absolute", tar.Header{Name: "/abs", Typeflag: tar.TypeReg, Mode: 0o644}, "refused entry"},
		{"dot-dot", tar.Header{Name: "a/../../escaped", Typeflag: tar.TypeReg, Mode: 0o644}, "refused entry"},
	} {
		dir, err := runTarIn(t, func(tw *tar.Writer) {
			writeEntry(tw, &tar.Header{Name: "first", Typeflag: tar.TypeReg, Mode: 0o444}, "1")
			writeEntry(tw, &tc.h, "x")
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "escaped")); err == nil {
			t.Errorf("%s: a file was written outside the directory", tc.name)
		}
	}
}

// TestKubeCheckInputPod: the pod of a spec with Input passes the check as
// built, and is refused when its input container was weakened or the
// sandbox's container may write InDir.
func TestKubeCheckInputPod(t *testing.T) {
	spec := engine.Spec{Cmd: []string{"x"}, InBytes: 1 << 20, Input: func(io.Writer) error { return nil }}
	if err := kubeCheckHardened(kubePod(spec, lifecycle.Owner{}, "p", kubePodOptions{}), spec); err != nil {
		t.Fatalf("the input pod as built: %v", err)
	}
	for _, tc := range []struct {
		name  string
		alter func(p *corev1.Pod)
		want  string
	}{
		{"input as root", func(p *corev1.Pod) { var z int64; p.Spec.InitContainers[0].SecurityContext.RunAsUser = &z }, "its input container does not run as the sandbox user"},
		{"input privileged", func(p *corev1.Pod) { y := true; p.Spec.InitContainers[0].SecurityContext.Privileged = &y }, "its input container is privileged"},
		{"input capability", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"DAC_OVERRIDE"}
		}, "keeps capabilities"},
		{"input mounts more", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].VolumeMounts = append(p.Spec.InitContainers[0].VolumeMounts, corev1.VolumeMount{Name: "workspace", MountPath: "/workspace"})
		}, "input container mounts /workspace"},
		{"another init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "x"})
		}, "other containers"},
		{"InDir writable", func(p *corev1.Pod) {
			for i := range p.Spec.Containers[0].VolumeMounts {
				p.Spec.Containers[0].VolumeMounts[i].ReadOnly = false
			}
		}, "may write /workspace/in"},
	} {
		p := kubePod(spec, lifecycle.Owner{}, "p", kubePodOptions{})
		tc.alter(p)
		if err := kubeCheckHardened(p, spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestKubeInputStates: the input container's states as fillInput reads
// them: waiting, a missing image at once, running, ended.
func TestKubeInputStates(t *testing.T) {
	pod := func(st corev1.ContainerState, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, InitContainerStatuses: []corev1.ContainerStatus{{Name: kubeInputContainer, Image: "localhost/x:1", State: st}}}}
	}
	if ok, err := kubeInputStarted(pod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}, corev1.PodPending)); ok || err != nil {
		t.Errorf("initializing: %v %v", ok, err)
	}
	if _, err := kubeInputStarted(pod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}, corev1.PodPending)); !errors.Is(err, engine.ErrImage) {
		t.Errorf("a missing image: %v", err)
	}
	if ok, err := kubeInputStarted(pod(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, corev1.PodPending)); !ok || err != nil {
		t.Errorf("running: %v %v", ok, err)
	}
	ended := pod(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}, corev1.PodFailed)
	if ok, err := kubeInputStarted(ended); !ok || err != nil {
		t.Errorf("ended: %v %v", ok, err)
	}
	if st := kubeInputExited(ended); st == nil || st.ExitCode != 1 {
		t.Errorf("the exit of an ended input container: %+v", st)
	}
	if kubeLastLine("Traceback:\n  x\nOSError: [Errno 28] No space left on device") != "OSError: [Errno 28] No space left on device" {
		t.Error("kubeLastLine")
	}
}
