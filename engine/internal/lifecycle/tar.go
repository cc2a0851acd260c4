package lifecycle

// The files of a sandbox that the engine's archive calls cannot reach
// (a Kubernetes pod, whose API has none; a mount inside gVisor, which the
// daemon does not see) pass through the sandbox's own Python, run with
// the engine's exec (the image may have no tar): a tar stream out of the
// sandbox, parsed by the host as hostile input (openTarFile: no links
// followed, sizes bounded), and one into it, extracted by a strict
// extractor (directories and regular files only, relative names without
// "..", no special modes). Such a process's parent is outside the
// sandbox's PID namespace, so the runtime's clean-up of stray processes
// spares it, as it spares relays.

// TarNoDir is the exit code of the helpers when the directory is missing.
const TarNoDir = 3

// TarOut writes to stdout a tar of the directory argv[1], as the
// engines' archive calls do: its base name first, links as links.
const TarOut = `import os, sys, tarfile
d = sys.argv[1]
if not os.path.lexists(d):
    sys.exit(3)
t = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
t.add(d, arcname=os.path.basename(d), recursive=True)
t.close()
sys.stdout.buffer.flush()
`

// TarIn extracts the tar on stdin into the directory argv[1]:
// directories and regular files only, relative names without "..", no
// special modes. It runs as the sandbox user: a directory's mode is set
// once everything is extracted, so that a read-only one (0555) is filled
// first.
const TarIn = `import os, sys, tarfile
d = sys.argv[1]
if not os.path.isdir(d):
    sys.exit(3)
dirs = []
t = tarfile.open(fileobj=sys.stdin.buffer, mode="r|")
for m in t:
    n = m.name
    parts = [p for p in n.split("/") if p not in ("", ".")]
    if n.startswith("/") or ".." in parts or not parts:
        sys.exit("refused entry %r" % n)
    p = os.path.join(d, *parts)
    if m.isdir():
        os.makedirs(p, exist_ok=True)
        dirs.append((p, m.mode & 0o777))
    elif m.isfile():
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.islink(p):
            os.unlink(p)
        src = t.extractfile(m)
        tmp = p + ".mcp-partial"
        with open(tmp, "wb") as f:
            while True:
                b = src.read(1 << 16)
                if not b:
                    break
                f.write(b)
        os.chmod(tmp, m.mode & 0o777)
        os.replace(tmp, p)
    else:
        sys.exit("refused entry %r: not a directory or regular file" % n)
for p, mode in reversed(dirs):
    os.chmod(p, mode)
`
