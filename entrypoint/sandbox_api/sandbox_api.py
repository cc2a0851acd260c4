"""The sandbox API of mcp-server-code-execution-mode: the helpers user code
calls inside the sandbox to discover, document and call MCP servers, and to
keep memories and tools on the host.

The runtime ships this file as the module mcp_sandbox_api (runtimeProgram
in entrypoint/entrypoint.go), compiled only when imported; the bridge's
init code (installCode in mcpbridge/sandbox_api.go) imports it in every new
interpreter and calls bind_namespace(globals()) there, which creates:

- the `mcp` package: `mcp.runtime` (the helpers, MCPError and
  MCPArgumentError) and `mcp.servers.<alias>` (a module per loaded server);
- in the user's globals: the mcp package, MCPError, the memory helpers
  and save_tool, LOADED_MCP_SERVERS, mcp_servers and an `mcp_<alias>`
  proxy per loaded server;
- the two entry points the bridge calls later in those globals:
  _mcp_bridge_configure(state) whenever the loaded servers change, and
  _mcp_bridge_load_tool(name, source) for each tool saved with save_tool.

Every host request goes through the runtime's RPC (the module
mcp_sandbox_runtime that entrypoint/runtime/runtime.py installs). Standard library
only; CPython 3.10 to 3.14.
"""

import asyncio
import base64
import glob
import importlib
import inspect
import io
import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
import types
import zipfile

import mcp_sandbox_runtime as rt

# SEARCH_LIMIT is how many tools search_tool_docs returns by default (the
# host's default for a request without a limit is the same).
SEARCH_LIMIT = 5
DETAILS = ("summary", "full")
# TOOL_RESULTS_RAW is the bridge's tool_results (MCP_BRIDGE_TOOL_RESULTS)
# under which tool calls return the whole CallToolResult.
TOOL_RESULTS_RAW = "raw"
# PUBLIC_MODULE is where user code finds the exception classes, and so
# where their tracebacks say they come from.
PUBLIC_MODULE = "mcp.runtime"


class MCPError(RuntimeError):
    """A proxied MCP server, or the bridge, reported an error. A
    RuntimeError, as in the original bridge, whose proxies raised
    RuntimeError."""

    __module__ = PUBLIC_MODULE


class MCPToolDenied(MCPError, AttributeError):
    """A tool the bridge's tool policy denies: it is in no list, doc or
    search, and a call of it through a server's proxy, which the bridge
    refuses, raises this, with the bridge's message naming the rule."""


class MCPArgumentError(MCPError, TypeError):
    """A tool was called with missing or unknown arguments."""

    __module__ = PUBLIC_MODULE


class InstallError(MCPError):
    """runtime.install could not install a package: the message names
    what was asked and says why (no such package, no wheel for this
    Python, the index unreachable or refused, the space for this session's
    installs full)."""

    __module__ = PUBLIC_MODULE


# ------------------------------------------------------------ host requests


def request(payload):
    """Sends payload to the host and returns its answer; a refusal is an MCPError."""
    try:
        return rt.rpc_sync(payload)
    except rt.RPCError as e:
        raise MCPError(str(e)) from None


async def request_async(payload):
    """Like request, awaiting the answer instead of blocking."""
    try:
        return await rt.rpc(payload)
    except rt.RPCError as e:
        raise MCPError(str(e)) from None


# ------------------------------------------------------------ tools


def raw_result(result):
    """The whole CallToolResult as the original bridge returned it (the MCP
    SDK's model_dump(by_alias=True, exclude_none=True)): _meta when sent,
    content, structuredContent when sent, and isError, always, then any
    other field the server sent."""
    rest = dict(result or {})
    out = {}
    if rest.get("_meta") is not None:
        out["_meta"] = rest.pop("_meta")
    out["content"] = rest.pop("content", None) or []
    if rest.get("structuredContent") is not None:
        out["structuredContent"] = rest.pop("structuredContent")
    out["isError"] = bool(rest.pop("isError", False))
    out.update((k, v) for k, v in rest.items() if v is not None)
    return out


class JSONText(str):
    """A tool's text result that is a JSON object or array: the text
    itself (a str in every way: compare, slice, print, json.loads), whose
    .json() returns it parsed."""

    __slots__ = ("_parsed",)

    def json(self):
        """The text parsed as JSON (parsed once, when the result came)."""
        return self._parsed


# MAX_JSON_TEXT bounds the text result parsed to offer .json().
MAX_JSON_TEXT = 8 << 20


def text_result(text):
    """text as a tool call returns it: a JSONText when it is a JSON object
    or array, else the str."""
    head = text.lstrip()[:1]
    if head not in ("{", "[") or len(text) > MAX_JSON_TEXT:
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    out = JSONText(text)
    out._parsed = parsed
    return out


def warn_result(answer):
    """Prints the bridge's warnings about a tool's result (its structured
    content does not match the tool's output schema) on stderr."""
    for w in answer.get("warnings") or ():
        print("warning: " + str(w), file=sys.stderr)


def unwrap(server, tool, result):
    """The value of a tool's result: with MCP_BRIDGE_TOOL_RESULTS=raw the
    whole result (raw_result), errors included; else its structured
    content, else its text when all of it is text (a JSONText, with
    .json(), when that text is a JSON object or array), else its content
    list, and a result that is an error raises MCPError with its text."""
    if current is not None and current.tool_results == TOOL_RESULTS_RAW:
        return raw_result(result)
    result = result or {}
    content = result.get("content") or []
    texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
    if result.get("isError"):
        raise MCPError("%s.%s failed: %s" % (server, tool, "\n".join(texts) or "error"))
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    if content and len(texts) == len(content):
        return text_result(texts[0] if len(texts) == 1 else "\n".join(texts))
    return content


# CODE_PREFIX starts the file name the runtime compiles each run_python
# call's code under (entrypoint/runtime/executor.py, CELL_PREFIX).
CODE_PREFIX = "<run_python#"


def code_line():
    """The line of the run_python code that this call comes from, or None
    (a task of asyncio.gather, a thread: no such frame on the stack).
    Only shown to whoever answers a confirmation: informative, not trusted."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename.startswith(CODE_PREFIX):
            return f.f_lineno
        f = f.f_back
    return None


def call_request(server, tool, arguments):
    """The host request that calls tool of server with arguments."""
    req = {"type": "call_tool", "server": server, "tool": tool, "arguments": arguments}
    line = code_line()
    if line:
        req["line"] = line
    return req


async def call_tool(server, tool, arguments=None, **kwargs):
    """Calls tool of a loaded server; returns its structured result, its
    text, or its content list (the whole result with MCP_BRIDGE_TOOL_RESULTS=raw)."""
    args = dict(arguments or {})
    args.update(kwargs)
    res = await request_async(call_request(server, tool, args))
    warn_result(res)
    return unwrap(server, tool, res.get("result"))


class Parameters:
    """The parameters of one tool, as the bridge decoded its input schema
    (the tool metadata's "params"): names checked, required first, then
    the optional ones sorted. Names that cannot be Python parameters (kind
    "extra") are left out of the signature but still accepted as keyword
    arguments."""

    def __init__(self, alias, params):
        self.alias = alias
        self.params = params
        self.names = [p["name"] for p in params]
        self.known = set(self.names)
        self.required = [p["name"] for p in params if p["required"]]
        self.listed = ", ".join(sorted(self.names))

    def signature(self):
        """The tool's signature: keyword-only parameters, the optional ones defaulting to None."""
        out = []
        for p in self.params:
            if p["kind"] == "keyword_only":
                default = inspect.Parameter.empty if p["required"] else None
                out.append(inspect.Parameter(p["name"], inspect.Parameter.KEYWORD_ONLY, default=default, annotation=p["annotation"]))
        return inspect.Signature(out)

    def doc_lines(self):
        """One docstring line per parameter: name, type, whether optional, description."""
        return [
            "    %s (%s%s): %s" % (p["name"], p["annotation"], "" if p["required"] else ", optional", p["description"])
            for p in self.params
        ]

    def bind(self, args, kwargs):
        """The arguments to send for a call with positional args and keyword
        kwargs (arguments={...} merged in); MCPArgumentError when they do
        not fit. Optional parameters left at None are not sent."""
        alias = self.alias
        if args:
            raise MCPArgumentError("%s() takes keyword arguments only: %s" % (alias, self.listed or "none"))
        given = {}
        if "arguments" not in self.known:  # arguments={...}, unless the tool has a parameter of that name
            try:
                given.update(kwargs.pop("arguments", None) or {})
            except (TypeError, ValueError):
                raise MCPArgumentError("%s() takes arguments= as a dict" % alias) from None
        given.update(kwargs)
        unknown = sorted(k for k in given if k not in self.known)
        if unknown and self.names:
            raise MCPArgumentError("%s() got unknown argument(s) %s; its parameters are: %s" % (alias, ", ".join(unknown), self.listed))
        missing = [p for p in self.required if p not in given]
        if missing:
            raise MCPArgumentError("%s() is missing required argument(s): %s" % (alias, ", ".join(missing)))
        return {k: v for k, v in given.items() if not (v is None and k not in self.required)}


class Shape:
    """What a tool returns, as the bridge renders it (display text in
    Python typing style, not an importable type): its repr is the text,
    so that signatures and help() show it bare."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    __str__ = __repr__


def returns_line(meta):
    """The docstring line saying what the tool meta returns, or ""."""
    text = meta.get("returns")
    if not text:
        return ""
    n = meta.get("returns_observed") or 0
    if n:
        return "\n\nReturns (observed in %d call%s): %s" % (n, "" if n == 1 else "s", text)
    return "\n\nReturns: " + text


def tool_proxy(server, meta):
    """The async function that calls the tool meta of server: named after
    the tool's alias, with the tool's signature (its return annotation the
    shape of what it returns, when known) and a docstring from its
    description, parameters and result."""
    tool, alias = meta["name"], meta["alias"]
    params = Parameters(alias, meta.get("params") or [])
    signature = params.signature()
    if meta.get("returns") and not meta["returns"].startswith("("):
        signature = signature.replace(return_annotation=Shape(meta["returns"]))
    lines = params.doc_lines()

    async def proxy(*args, **kwargs):
        return await call_tool(server, tool, params.bind(args, kwargs))

    proxy.__name__ = proxy.__qualname__ = alias
    proxy.__signature__ = signature
    doc = (meta.get("description") or "").strip() or "%s.%s" % (server, tool)
    proxy.__doc__ = doc + "\n\nMCP tool %r of server %r.%s%s" % (tool, server, ("\n\nArguments:\n" + "\n".join(lines)) if lines else "", returns_line(meta))
    return proxy


# POLICY_REFUSAL begins the bridge's message for a call its tool policy
# refuses (policy.ErrRefused); a denied tool's is POLICY_REFUSAL + ": " +
# "<server>.<tool> is denied: <rule>".
POLICY_REFUSAL = "refused by the tool policy"


def denied_tool_proxy(server, tool, name):
    """The async function that calls tool of server, a tool the policy
    denies (named name on the server's proxy). The sandbox refuses nothing
    itself: the call goes to the bridge, which refuses it, writes its
    audit record and says why; that refusal is raised as MCPToolDenied
    (any other answer as a call of any tool has it). Its arguments are
    checked as those of a tool without parameters: keywords only."""
    params = Parameters(name, [])
    denial = "%s: %s.%s is denied: " % (POLICY_REFUSAL, server, tool)

    async def proxy(*args, **kwargs):
        arguments = params.bind(args, kwargs)
        try:
            res = await request_async(call_request(server, tool, arguments))
        except MCPError as e:
            if str(e).startswith(denial):
                raise MCPToolDenied(str(e)) from None
            raise
        warn_result(res)
        return unwrap(server, tool, res.get("result"))

    proxy.__name__ = proxy.__qualname__ = name
    proxy.__doc__ = "MCP tool %r of server %r, which the tool policy denies: the bridge refuses its calls." % (tool, server)
    return proxy


class ServerProxy:
    """The tools of one loaded MCP server, as async methods.

    A tool the policy denies (the metadata's "denied": names and aliases
    to tool names) is in no dir(), but naming it gives a function all the
    same (so hasattr is True for it), whose call the bridge refuses, with
    an audit record, raising MCPToolDenied."""

    def __init__(self, meta):
        self._meta = meta
        self._tools = {}
        for t in meta.get("tools", []):
            fn = tool_proxy(meta["name"], t)
            self._tools[t["alias"]] = fn
            self._tools.setdefault(t["name"], fn)
        self._denied = {n: denied_tool_proxy(meta["name"], tool, n) for n, tool in (meta.get("denied") or {}).items()}
        if "list_tools" not in self._tools:
            # As the original's proxies: await mcp_<alias>.list_tools()
            # (a tool of that name wins).
            self.list_tools = self._list_tools

    async def _list_tools(self):
        """The tools of this server, as the server lists them."""
        return await list_tools(self._meta["name"])

    def __getattr__(self, name):
        tools = self.__dict__.get("_tools", {})
        if name in tools:
            return tools[name]
        denied = self.__dict__.get("_denied", {})
        if name in denied:
            return denied[name]
        raise AttributeError(
            "MCP server %r has no tool %r; its tools: %s"
            % (self.__dict__.get("_meta", {}).get("name"), name, ", ".join(t["alias"] for t in self._meta.get("tools", [])))
        )

    def __dir__(self):
        return sorted(t["alias"] for t in self._meta.get("tools", []))

    def __repr__(self):
        return "<MCP server %r: %d tools>" % (self._meta["name"], len(self._meta.get("tools", [])))


def server_module(meta, proxy):
    """The module mcp.servers.<alias> of a loaded server: a function per
    tool, TOOLS (their metadata), TOOL_MAP (alias to function) and
    __all__."""
    tools = meta.get("tools", [])
    mod = types.ModuleType("mcp.servers." + meta["alias"])
    mod.TOOLS = [dict(t) for t in tools]
    mod.TOOL_MAP = {}
    for t in tools:
        fn = proxy._tools[t["alias"]]
        setattr(mod, t["alias"], fn)
        mod.TOOL_MAP[t["alias"]] = fn
    mod.__all__ = [t["alias"] for t in tools]
    return mod


def copy_meta(meta):
    """A copy of a loaded server's metadata that user code may change:
    name, alias, description, cwd and a copy of each tool's."""
    return {
        "name": meta["name"],
        "alias": meta["alias"],
        "description": meta.get("description", ""),
        "cwd": meta.get("cwd", ""),
        "tools": [dict(t) for t in meta.get("tools", [])],
    }


# ------------------------------------------------------------ mcp.runtime


def discovered_servers(detailed=False):
    """Every configured server: names, or dicts with name and description when detailed."""
    servers = request({"type": "discovered_servers"}).get("servers") or []
    if detailed:
        return tuple(dict(s) for s in servers)
    return tuple(s["name"] for s in servers)


async def list_servers():
    """The servers this session may call (loaded), from the host."""
    return tuple(request({"type": "list_servers"}).get("servers") or [])


def list_servers_sync():
    """The servers this session may call (loaded), from the cache."""
    return tuple(sorted(current.servers))


def describe_server(name):
    """The metadata of a loaded server: name, alias, description, cwd and tools."""
    return copy_meta(current.find(name))


def list_loaded_server_metadata():
    return tuple(copy_meta(current.servers[n]) for n in current.order)


async def list_tools(server):
    """The tools of a loaded server, as the server lists them."""
    return (await request_async({"type": "list_tools", "server": server})).get("tools") or []


def list_tools_sync(server=None):
    """The cached tools of a loaded server."""
    if server is None:
        raise MCPError("list_tools_sync(server) requires a server name")
    return [dict(t) for t in current.find(server).get("tools", [])]


def detail_of(detail):
    """detail as the original reads it: 'full' in any case, else 'summary'
    (None and unknown values included)."""
    value = "summary" if detail is None else str(detail).lower()
    return value if value in DETAILS else "summary"


def limit_of(limit):
    """limit as the original reads it: a whole number, at least 1; None
    or a value that is not a number is the default."""
    try:
        return max(1, int(limit))
    except (TypeError, ValueError):
        return SEARCH_LIMIT


def tool_docs(server, tool, detail):
    """The host's docs of a server's tools, or of one of them."""
    if tool is not None and not isinstance(tool, str):
        raise MCPError("'tool' must be a string when provided")
    detail = detail_of(detail)
    docs = request({"type": "query_tool_docs", "server": server, "tool": tool or "", "detail": detail}).get("docs") or []
    return docs[0] if tool and docs else docs


async def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of a server's tools (a list), or of one tool (a dict); detail='full' adds input schemas."""
    return tool_docs(server, tool, detail)


def query_tool_docs_sync(server, tool=None, detail="summary"):
    return tool_docs(server, tool, detail)


class SearchResults(list):
    """The hits of a search, best first: a list, with .notes naming the
    servers left out of it and why (one that failed to start, one still
    starting); the notes are also printed on stderr."""

    notes = ()


def search(query, limit, detail):
    """The host's ranking of every configured server's tools for query."""
    res = request({"type": "search_tool_docs", "query": str(query), "limit": limit_of(limit), "detail": detail_of(detail)})
    hits = SearchResults(res.get("results") or [])
    hits.notes = tuple(res.get("notes") or ())
    for note in hits.notes:
        print("search_tool_docs: " + note, file=sys.stderr)
    return hits


async def search_tool_docs(query, *, limit=SEARCH_LIMIT, detail="summary"):
    """Tools of every configured server ranked by relevance to query, best first."""
    return search(query, limit, detail)


def search_tool_docs_sync(query, *, limit=SEARCH_LIMIT, detail="summary"):
    return search(query, limit, detail)


def stubs(server):
    """The interface of a configured server's tools as .pyi-style text: a
    stub per tool (the alias its proxy has, keyword-only parameters with
    their types, the shape of what it returns, declared or observed) and
    its summary. One call reads a whole server."""
    return request({"type": "stubs", "server": str(server)}).get("stubs") or ""


def report_progress(progress, total=None, message=None):
    """Tells the client how far this call is (progress out of total, when
    known, with a message), as an MCP progress notification. Does nothing
    when the client asked for no progress; never blocks and never raises."""
    report = getattr(rt, "report_progress", None)
    if report is not None:
        report(progress, total, message)


# ------------------------------------------------------------ packages

# PIP_DIR keeps the bridge's pip wheel once the first install brought it.
PIP_DIR = "/tmp/mcp-pip"
# INSTALL_TIMEOUT bounds one runtime.install (seconds).
INSTALL_TIMEOUT = 900
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def pip_wheel():
    """The directory pip was unpacked to earlier, or None."""
    found = sorted(d for d in glob.glob(PIP_DIR + "/pip-*") if os.path.isdir(d) and not d.endswith(".part"))
    return found[-1] if found else None


_image_pip = None


def image_pip():
    """Whether the image's Python has a pip of its own (importable in
    isolated mode, which reads no PYTHON* variable and no user or session
    directory), looked at once per sandbox."""
    global _image_pip
    if _image_pip is None:
        try:
            p = subprocess.run([sys.executable, "-I", "-c", "import pip"], capture_output=True, timeout=60)
            _image_pip = p.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _image_pip = False
    return _image_pip


def install_request(reqs, wheel):
    """The install request to the host: the requirements, whether pip's
    wheel was unpacked before and, when it was not, whether the image has
    pip of its own."""
    return {"type": "install", "requirements": reqs, "have_wheel": wheel is not None,
            "image_pip": wheel is None and image_pip()}


def install_plan(plan, pip_dir):
    """pip's command and environment for the host's plan: the image's own
    pip, in isolated mode, when the plan says so; else pip unpacked from
    the wheel the host sent (once per sandbox; unpacked, its modules'
    bytecode is kept for the next install); the proxy variables naming the
    install endpoint (whose connections the host lets reach the indexes
    only). pip reads no configuration file of the image."""
    image = plan.get("pip") == "image" and not plan.get("wheel")
    if pip_dir is None and not image:
        name = os.path.basename(str(plan.get("wheel_name") or "pip.whl"))
        os.makedirs(PIP_DIR, mode=0o700, exist_ok=True)
        pip_dir = os.path.join(PIP_DIR, name[: -len(".whl")] if name.endswith(".whl") else name)
        part = pip_dir + ".part"
        with zipfile.ZipFile(io.BytesIO(base64.b64decode(plan.get("wheel") or ""))) as z:
            z.extractall(part)
        os.replace(part, pip_dir)
    try:
        proxy = rt.install_endpoint()
    except (AttributeError, RuntimeError) as e:
        raise InstallError(str(e)) from None
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1", PIP_CONFIG_FILE=os.devnull)
    for var in PROXY_VARS:
        env[var] = proxy
    if image:
        return [sys.executable, "-I", "-m", "pip"] + [str(a) for a in plan["args"]], env
    env["PYTHONPATH"] = pip_dir
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return [sys.executable, "-m", "pip"] + [str(a) for a in plan["args"]], env


def install_ended_sync():
    """Tells the host that the pip of an install it answered ended, so
    that it closes the install endpoint once none runs (it closes it when
    the call ends in any case); never raises."""
    try:
        rt.rpc_sync({"type": "install", "op": "ended"})
    except Exception:
        pass


async def install_ended():
    """install_ended_sync, awaiting the host instead of blocking."""
    try:
        await rt.rpc({"type": "install", "op": "ended"})
    except Exception:
        pass


def install_requirements(requirements):
    """The requirements as strings, or TypeError."""
    for r in requirements:
        if not isinstance(r, str):
            raise TypeError("runtime.install takes requirement strings, such as \"requests\" or \"numpy>=1.26\"")
    return list(requirements)


def site_entries(plan):
    """The names in the install directory now (none when it is missing)."""
    try:
        return set(os.listdir(plan["target"]))
    except OSError:
        return set()


def remove_new(plan, before):
    """Removes what a failed pip left in the install directory: the
    entries that were not there before it ran, so that a full or broken
    install does not fill the space of the next."""
    target = plan["target"]
    for name in site_entries(plan) - before:
        path = os.path.join(target, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def install_done(plan, rc, out, err, before=frozenset()):
    """The summary of a finished pip, its directory on the import path;
    InstallError (what it left removed) when it failed."""
    reqs = plan.get("requirements") or []
    asked = ", ".join(reqs[:5]) + (" and %d more" % (len(reqs) - 5) if len(reqs) > 5 else "")
    if rc != 0:
        remove_new(plan, before)
        lines = [l[len("ERROR:"):].strip() for l in err.splitlines() if l.startswith("ERROR:")]
        if "No space left on device" in err:
            lines.append("the space for this session's installs (%s) is full" % plan.get("target"))
        if not lines:
            lines = (err or out).strip().splitlines()[-3:]
        raise InstallError("installing %s: pip exited with %d: %s" % (asked, rc, "; ".join(lines)))
    target = plan["target"]
    if target not in sys.path:
        site.addsitedir(target)
    importlib.invalidate_caches()
    done = [l for l in out.splitlines() if l.startswith("Successfully installed")]
    return done[-1] if done else "Already installed: " + asked


def install_sync(*requirements):
    """Installs PEP 508 requirements ("polars==1.2", "requests[socks]") into
    this session only, importable at once; returns pip's summary. Raises
    InstallError, naming the package and the cause."""
    reqs = install_requirements(requirements)
    wheel = pip_wheel()
    try:
        plan = rt.rpc_sync(install_request(reqs, wheel))
    except rt.RPCError as e:
        raise InstallError(str(e)) from None
    try:
        cmd, env = install_plan(plan, wheel)
        before = site_entries(plan)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            remove_new(plan, before)
            raise InstallError("installing %s: pip did not finish within %d s" % (", ".join(reqs), INSTALL_TIMEOUT)) from None
    finally:
        install_ended_sync()
    return install_done(plan, p.returncode, p.stdout, p.stderr, before)


async def install(*requirements):
    """install_sync, awaiting pip instead of blocking the event loop."""
    reqs = install_requirements(requirements)
    wheel = pip_wheel()
    try:
        plan = await rt.rpc(install_request(reqs, wheel))
    except rt.RPCError as e:
        raise InstallError(str(e)) from None
    try:
        cmd, env = install_plan(plan, wheel)
        before = site_entries(plan)
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), INSTALL_TIMEOUT)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            remove_new(plan, before)
            raise InstallError("installing %s: pip did not finish within %d s" % (", ".join(reqs), INSTALL_TIMEOUT)) from None
    finally:
        await install_ended()
    return install_done(plan, proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), before)


def show(*objs, mime=None):
    """Shows each object with the call's result: a matplotlib figure, a PIL
    image, PNG/JPEG/GIF/WebP/SVG bytes or a path to such a file as image
    content; anything else as its text. The builtin display() is the same."""
    rt.display(*objs, mime=mime)


def capability_summary():
    loaded = ", ".join(current.order) or "none"
    return (
        "Python sandbox (no network, read-only root, /tmp and /workspace writable) whose state persists "
        "between run_python calls. MCP servers are discovered with runtime.discovered_servers() and "
        "runtime.search_tool_docs(query); servers listed in run_python's 'servers' argument become "
        "mcp_<alias> proxies whose async tool functions are awaited directly. Loaded now: %s." % loaded
    )


# ------------------------------------------------------------ memories and saved tools


def memory_request(op, key="", value=None, metadata=None):
    """Sends one memory operation to the host; values must be JSON."""
    payload = {"type": "memory", "op": op, "key": key}
    if op in ("save", "update"):
        try:
            json.dumps(value)
            json.dumps(metadata)
        except (TypeError, ValueError) as e:
            raise TypeError("memory values must be JSON-serializable: %s" % e) from None
        payload["value"], payload["metadata"] = value, metadata
    return request(payload)


def save_memory(key, value, metadata=None):
    """Stores a JSON-serializable value under key on the host; it outlives the sandbox. Returns its info."""
    return memory_request("save", key, value, metadata)


def load_memory(key, default=None):
    """The value stored under key, or default."""
    res = memory_request("load", key)
    return default if res is None else res.get("value")


def update_memory(key, value, metadata=None):
    """Replaces the value of an existing memory (MCPError if there is none). Returns its info."""
    return memory_request("update", key, value, metadata)


def delete_memory(key):
    """Deletes a memory; returns whether it existed."""
    return bool(memory_request("delete", key))


def list_memories():
    """The keys of every stored memory, sorted."""
    return list(memory_request("list") or [])


def memory_exists(key):
    return bool(memory_request("exists", key))


def get_memory_info(key):
    """Size, metadata and times of a memory, or None."""
    return memory_request("info", key)


def save_tool(func):
    """Saves a function's source on the host; it is defined again in every new session. Returns its name."""
    if not callable(func) or not hasattr(func, "__name__"):
        raise TypeError("save_tool takes a function")
    try:
        src = inspect.getsource(func)
    except (OSError, TypeError) as e:
        raise MCPError("cannot read the source of %s: %s" % (func.__name__, e)) from None
    request({"type": "save_tool", "name": func.__name__, "source": textwrap.dedent(src)})
    return func.__name__


# GLOBAL_HELPERS are in the user's globals as well as in mcp.runtime.
GLOBAL_HELPERS = (save_memory, load_memory, update_memory, delete_memory, list_memories, memory_exists, get_memory_info, save_tool)
RUNTIME_HELPERS = (
    call_tool, discovered_servers, list_servers, list_servers_sync, describe_server, list_loaded_server_metadata,
    list_tools, list_tools_sync, query_tool_docs, query_tool_docs_sync, search_tool_docs, search_tool_docs_sync,
    capability_summary, report_progress, show, install, install_sync, stubs,
) + GLOBAL_HELPERS


def make_package():
    """Creates the mcp package (mcp, mcp.runtime, mcp.servers) in
    sys.modules; returns mcp.servers, which gets a module per loaded
    server."""
    pkg = types.ModuleType("mcp")
    pkg.__path__ = []
    runtime = types.ModuleType("mcp.runtime")
    servers = types.ModuleType("mcp.servers")
    servers.__path__ = []
    for fn in RUNTIME_HELPERS:
        setattr(runtime, fn.__name__, fn)
    runtime.MCPError = MCPError
    runtime.MCPArgumentError = MCPArgumentError
    runtime.InstallError = InstallError
    pkg.runtime, pkg.servers, pkg.MCPError = runtime, servers, MCPError
    sys.modules.update({"mcp": pkg, "mcp.runtime": runtime, "mcp.servers": servers})
    return servers


# ------------------------------------------------------------ installation


class Installation:
    """The sandbox API in one interpreter: the user's globals it writes
    to, the mcp.servers package, and the servers loaded so far."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.servers = {}  # name -> metadata from the bridge
        self.order = []  # names, in load order
        self.tool_results = "simple"  # or TOOL_RESULTS_RAW, from the bridge
        self.servers_package = make_package()

    def find(self, name):
        """The metadata of the loaded server called name, or aliased name."""
        meta = self.servers.get(name)
        if meta is None:
            for m in self.servers.values():
                if m["alias"] == name:
                    return m
            raise MCPError("Server %r is not available: load it with the run_python 'servers' argument" % (name,))
        return meta

    def configure(self, state):
        """Installs the proxies of the servers in state (from the bridge:
        every server loaded so far) in the user's globals and as
        mcp.servers modules, and what tool calls return (tool_results)."""
        ns = self.namespace
        self.tool_results = state.get("tool_results") or self.tool_results
        for meta in state.get("servers") or []:
            name, alias = meta["name"], meta["alias"]
            if name not in self.servers:
                self.order.append(name)
            self.servers[name] = meta
            proxy = ServerProxy(meta)
            mod = server_module(meta, proxy)
            sys.modules["mcp.servers." + alias] = mod
            setattr(self.servers_package, alias, mod)
            ns["mcp_" + alias] = proxy
        ns["mcp_servers"] = {n: ns["mcp_" + self.servers[n]["alias"]] for n in self.order}
        ns["LOADED_MCP_SERVERS"] = tuple(self.order)
        ns["MCPError"] = MCPError
        ns["mcp"] = sys.modules["mcp"]  # as the original: mcp.runtime without an import
        for fn in GLOBAL_HELPERS:
            ns[fn.__name__] = fn

    def load_tool(self, name, source):
        """Defines a tool saved with save_tool in the user's globals; one
        that fails is reported on stderr and spares the session."""
        try:
            exec(compile(source, "<saved tool %s>" % name, "exec"), self.namespace)
        except Exception as e:  # a broken saved tool must not break the session
            print("saved tool %s failed to load: %r" % (name, e), file=sys.stderr)


# current is the Installation of this interpreter, once bind_namespace ran.
current = None


def bind_namespace(namespace):
    """Installs the sandbox API in this interpreter, namespace being the
    user's globals, and returns it. The bridge's entry point: it also
    defines there the functions the bridge calls later,
    _mcp_bridge_configure(state) and _mcp_bridge_load_tool(name, source)."""
    global current
    current = Installation(namespace)
    namespace["_mcp_bridge_configure"] = current.configure
    namespace["_mcp_bridge_load_tool"] = current.load_tool
    current.configure({"servers": []})
    return current
