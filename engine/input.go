package engine

// The input of a sandbox pod (Spec.Input) is extracted into InDir by the
// pod's init container (engine/kube), the only container that mounts it
// writable: the bridge attaches to it (pods/attach), streams the tar to
// its standard input and closes it, and waits for it to exit 0; only then
// does the kubelet start the sandbox's container, which mounts InDir
// read-only. An extractor that refuses the tar, or a mount too small for
// it, ends the container with an error, which the start reports. The
// other backends take no input at start: their engine copies it in, as
// root, once the sandbox runs (Files.CopyIn), and InputFilled tells the
// caller which happened.

// PhaseInput is the phase of a start in which an engine fills InDir from
// Spec.Input (Kubernetes: the input container's run).
const PhaseInput = "input"

// An InputFiller is a Sandbox whose engine may have filled InDir from
// Spec.Input as it started, before the sandbox's process ran.
type InputFiller interface {
	// InputFilled reports whether InDir was filled from Spec.Input.
	InputFilled() bool
}

// InputFilled reports whether sb's engine filled InDir from Spec.Input
// as sb started; when not, the caller copies the input in (Files.CopyIn).
func InputFilled(sb Sandbox) bool {
	f, ok := sb.(InputFiller)
	return ok && f.InputFilled()
}
