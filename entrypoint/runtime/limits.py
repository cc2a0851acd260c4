"""Lowering the runtime's own resource limits, where the engine sets none.

Installed in the sandbox as the module `mcp_sandbox_limits`. A Kubernetes
pod has no rlimits of its own: the bridge names the limits of the sandbox
in the variable MCP_SANDBOX_RLIMITS ("nofile=1024,nproc=128"), and the
runtime, at start and before any code runs, lowers its soft and hard limits
to them (which its children inherit) and drops the variable. A limit is
never raised; one that cannot be lowered, or a value that cannot be read,
ends the runtime: a sandbox does not run without its limits. Standard
library only.
"""

import os
import resource

ENV = "MCP_SANDBOX_RLIMITS"

# The limits the variable may name.
LIMITS = {"nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}


def parse(value):
    """Returns {name: limit} of a value such as "nofile=1024,nproc=128";
    raises ValueError for an unknown name or a value that is not a
    positive integer."""
    limits = {}
    for item in value.split(","):
        name, sep, n = item.strip().partition("=")
        if not sep or name not in LIMITS or not n.isdigit() or int(n) <= 0:
            raise ValueError("bad rlimit %r in %s=%r" % (item, ENV, value))
        limits[name] = int(n)
    return limits


def lowered(current, limit):
    """The value of a limit now current lowered to limit, never raised."""
    if current == resource.RLIM_INFINITY or current < 0:
        return limit
    return min(current, limit)


def lower(limits):
    """Lowers the soft and hard limits of {name: limit}, never raising one;
    returns {name: (soft, hard)} as they are then."""
    got = {}
    for name, limit in sorted(limits.items()):
        which = LIMITS[name]
        soft, hard = resource.getrlimit(which)
        hard = lowered(hard, limit)
        soft = min(lowered(soft, limit), hard)
        resource.setrlimit(which, (soft, hard))
        got[name] = resource.getrlimit(which)
    return got


def lower_from_environ(environ=None):
    """Lowers the limits the environment names and removes the variable;
    returns what lower returned ({} without the variable). A value that
    cannot be read or applied raises SystemExit, with why."""
    environ = os.environ if environ is None else environ
    value = environ.pop(ENV, None)
    if value is None:
        return {}
    try:
        return lower(parse(value))
    except (ValueError, OSError) as e:
        raise SystemExit("mcp runtime: cannot lower its limits: %s" % e)
