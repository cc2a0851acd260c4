# The helper surface inside the sandbox: the `mcp` package, its `runtime`
# module, `mcp.servers.<alias>` modules and the `mcp_<alias>` proxies. The
# bridge runs this file in every new interpreter, then calls
# _mcp_bridge_configure(state) whenever the loaded servers change.
# Standard library only; every host request goes through
# mcp_sandbox_runtime's rpc.


def _mcp_bridge_install():
    import inspect
    import json
    import sys
    import types

    import mcp_sandbox_runtime as rt

    class MCPError(Exception):
        """A proxied MCP server, or the bridge, reported an error."""

    class MCPArgumentError(MCPError, TypeError):
        """A tool was called with missing or unknown arguments."""

    state = {"servers": {}, "order": []}

    def _fail(e):
        return MCPError(str(e))

    def _rpc_sync(payload):
        try:
            return rt.rpc_sync(payload)
        except rt.RPCError as e:
            raise _fail(e) from None

    async def _rpc(payload):
        try:
            return await rt.rpc(payload)
        except rt.RPCError as e:
            raise _fail(e) from None

    def _unwrap(server, tool, result):
        result = result or {}
        content = result.get("content") or []
        texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if result.get("isError"):
            raise MCPError("%s.%s failed: %s" % (server, tool, "\n".join(texts) or "error"))
        if result.get("structuredContent") is not None:
            return result["structuredContent"]
        if content and len(texts) == len(content):
            return texts[0] if len(texts) == 1 else "\n".join(texts)
        return content

    async def call_tool(server, tool, arguments=None, **kwargs):
        """Calls tool of a loaded server; returns its structured result, its text, or its content list."""
        args = dict(arguments or {})
        args.update(kwargs)
        res = await _rpc({"type": "call_tool", "server": server, "tool": tool, "arguments": args})
        return _unwrap(server, tool, res.get("result"))

    def _make_tool(server, meta):
        # The bridge decoded the tool's input schema into meta["params"]:
        # names checked, required first, then the optional ones sorted.
        # Names that cannot be Python parameters (kind "extra") are left
        # out of the signature but still accepted as keyword arguments.
        params = meta.get("params") or []
        props = [p["name"] for p in params]
        known = set(props)
        required = [p["name"] for p in params if p["required"]]
        listed = ", ".join(sorted(props))
        signature, lines = [], []
        for p in params:
            name, ann = p["name"], p["annotation"]
            lines.append("    %s (%s%s): %s" % (name, ann, "" if p["required"] else ", optional", p["description"]))
            if p["kind"] == "keyword_only":
                default = inspect.Parameter.empty if p["required"] else None
                signature.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
        tool, alias = meta["name"], meta["alias"]

        async def proxy(*args, **kwargs):
            if args:
                raise MCPArgumentError("%s() takes keyword arguments only: %s" % (alias, listed or "none"))
            given = {}
            if "arguments" not in known:  # arguments={...}, unless the tool has a parameter of that name
                try:
                    given.update(kwargs.pop("arguments", None) or {})
                except (TypeError, ValueError):
                    raise MCPArgumentError("%s() takes arguments= as a dict" % alias) from None
            given.update(kwargs)
            unknown = sorted(k for k in given if k not in known)
            if unknown and props:
                raise MCPArgumentError("%s() got unknown argument(s) %s; its parameters are: %s" % (alias, ", ".join(unknown), listed))
            missing = [p for p in required if p not in given]
            if missing:
                raise MCPArgumentError("%s() is missing required argument(s): %s" % (alias, ", ".join(missing)))
            # Optional parameters left at None are not sent.
            given = {k: v for k, v in given.items() if not (v is None and k not in required)}
            return await call_tool(server, tool, given)

        proxy.__name__ = proxy.__qualname__ = alias
        proxy.__signature__ = inspect.Signature(signature)
        doc = (meta.get("description") or "").strip() or "%s.%s" % (server, tool)
        proxy.__doc__ = doc + "\n\nMCP tool %r of server %r.%s" % (tool, server, ("\n\nArguments:\n" + "\n".join(lines)) if lines else "")
        return proxy

    class ServerProxy:
        """The tools of one loaded MCP server, as async methods."""

        def __init__(self, meta):
            self._meta = meta
            self._tools = {}
            for t in meta.get("tools", []):
                fn = _make_tool(meta["name"], t)
                self._tools[t["alias"]] = fn
                self._tools.setdefault(t["name"], fn)

        def __getattr__(self, name):
            tools = self.__dict__.get("_tools", {})
            if name in tools:
                return tools[name]
            raise AttributeError(
                "MCP server %r has no tool %r; its tools: %s"
                % (self.__dict__.get("_meta", {}).get("name"), name, ", ".join(t["alias"] for t in self._meta.get("tools", [])))
            )

        def __dir__(self):
            return sorted(t["alias"] for t in self._meta.get("tools", []))

        def __repr__(self):
            return "<MCP server %r: %d tools>" % (self._meta["name"], len(self._meta.get("tools", [])))

    def _copy(meta):
        return {
            "name": meta["name"],
            "alias": meta["alias"],
            "description": meta.get("description", ""),
            "cwd": meta.get("cwd", ""),
            "tools": [dict(t) for t in meta.get("tools", [])],
        }

    def _loaded(name):
        meta = state["servers"].get(name)
        if meta is None:
            for m in state["servers"].values():
                if m["alias"] == name:
                    return m
            raise MCPError("Server %r is not available: load it with the run_python 'servers' argument" % (name,))
        return meta

    def discovered_servers(detailed=False):
        """Every configured server: names, or dicts with name and description when detailed."""
        servers = _rpc_sync({"type": "discovered_servers"}).get("servers") or []
        if detailed:
            return tuple(dict(s) for s in servers)
        return tuple(s["name"] for s in servers)

    async def list_servers():
        """The servers this session may call (loaded), from the host."""
        return tuple(_rpc_sync({"type": "list_servers"}).get("servers") or [])

    def list_servers_sync():
        """The servers this session may call (loaded), from the cache."""
        return tuple(sorted(state["servers"]))

    def describe_server(name):
        """The metadata of a loaded server: name, alias, description, cwd and tools."""
        return _copy(_loaded(name))

    def list_loaded_server_metadata():
        return tuple(_copy(state["servers"][n]) for n in state["order"])

    async def list_tools(server):
        """The tools of a loaded server, as the server lists them."""
        return (await _rpc({"type": "list_tools", "server": server})).get("tools") or []

    def list_tools_sync(server):
        """The cached tools of a loaded server."""
        return [dict(t) for t in _loaded(server).get("tools", [])]

    def _docs(server, tool, detail):
        if detail not in ("summary", "full"):
            raise ValueError("detail must be 'summary' or 'full'")
        docs = _rpc_sync({"type": "query_tool_docs", "server": server, "tool": tool or "", "detail": detail}).get("docs") or []
        return docs[0] if tool and docs else docs

    async def query_tool_docs(server, tool=None, detail="summary"):
        """Docs of a server's tools (a list), or of one tool (a dict); detail='full' adds input schemas."""
        return _docs(server, tool, detail)

    def query_tool_docs_sync(server, tool=None, detail="summary"):
        return _docs(server, tool, detail)

    def _search(query, limit, detail):
        if detail not in ("summary", "full"):
            raise ValueError("detail must be 'summary' or 'full'")
        res = _rpc_sync({"type": "search_tool_docs", "query": str(query), "limit": int(limit), "detail": detail})
        return res.get("results") or []

    async def search_tool_docs(query, *, limit=5, detail="summary"):
        """Tools of every configured server ranked by relevance to query, best first."""
        return _search(query, limit, detail)

    def search_tool_docs_sync(query, *, limit=5, detail="summary"):
        return _search(query, limit, detail)

    def capability_summary():
        loaded = ", ".join(state["order"]) or "none"
        return (
            "Python sandbox (no network, read-only root, /tmp and /workspace writable) whose state persists "
            "between run_python calls. MCP servers are discovered with runtime.discovered_servers() and "
            "runtime.search_tool_docs(query); servers listed in run_python's 'servers' argument become "
            "mcp_<alias> proxies whose async tool functions are awaited directly. Loaded now: %s." % loaded
        )

    def _memory(op, key="", value=None, metadata=None):
        payload = {"type": "memory", "op": op, "key": key}
        if op in ("save", "update"):
            try:
                json.dumps(value)
                json.dumps(metadata)
            except (TypeError, ValueError) as e:
                raise TypeError("memory values must be JSON-serializable: %s" % e) from None
            payload["value"], payload["metadata"] = value, metadata
        return _rpc_sync(payload)

    def save_memory(key, value, metadata=None):
        """Stores a JSON-serializable value under key on the host; it outlives the sandbox. Returns its info."""
        return _memory("save", key, value, metadata)

    def load_memory(key, default=None):
        """The value stored under key, or default."""
        res = _memory("load", key)
        return default if res is None else res.get("value")

    def update_memory(key, value, metadata=None):
        """Replaces the value of an existing memory (MCPError if there is none). Returns its info."""
        return _memory("update", key, value, metadata)

    def delete_memory(key):
        """Deletes a memory; returns whether it existed."""
        return bool(_memory("delete", key))

    def list_memories():
        """The keys of every stored memory, sorted."""
        return list(_memory("list") or [])

    def memory_exists(key):
        return bool(_memory("exists", key))

    def get_memory_info(key):
        """Size, metadata and times of a memory, or None."""
        return _memory("info", key)

    def save_tool(func):
        """Saves a function's source on the host; it is defined again in every new session. Returns its name."""
        if not callable(func) or not hasattr(func, "__name__"):
            raise TypeError("save_tool takes a function")
        try:
            src = inspect.getsource(func)
        except (OSError, TypeError) as e:
            raise MCPError("cannot read the source of %s: %s" % (func.__name__, e)) from None
        import textwrap

        _rpc_sync({"type": "save_tool", "name": func.__name__, "source": textwrap.dedent(src)})
        return func.__name__

    helpers = (save_memory, load_memory, update_memory, delete_memory, list_memories, memory_exists, get_memory_info, save_tool)

    pkg = types.ModuleType("mcp")
    pkg.__path__ = []
    runtime = types.ModuleType("mcp.runtime")
    servers_pkg = types.ModuleType("mcp.servers")
    servers_pkg.__path__ = []
    for fn in (
        call_tool, discovered_servers, list_servers, list_servers_sync, describe_server, list_loaded_server_metadata,
        list_tools, list_tools_sync, query_tool_docs, query_tool_docs_sync, search_tool_docs, search_tool_docs_sync,
        capability_summary,
    ) + helpers:
        setattr(runtime, fn.__name__, fn)
    runtime.MCPError = MCPError
    runtime.MCPArgumentError = MCPArgumentError
    pkg.runtime, pkg.servers, pkg.MCPError = runtime, servers_pkg, MCPError
    sys.modules.update({"mcp": pkg, "mcp.runtime": runtime, "mcp.servers": servers_pkg})

    def configure(new_state, namespace):
        """Installs the proxies of the loaded servers into namespace (the user's globals)."""
        for meta in new_state.get("servers") or []:
            name, alias = meta["name"], meta["alias"]
            if name not in state["servers"]:
                state["order"].append(name)
            state["servers"][name] = meta
            proxy = ServerProxy(meta)
            mod = types.ModuleType("mcp.servers." + alias)
            mod.TOOLS = [dict(t) for t in meta.get("tools", [])]
            mod.TOOL_MAP = {}
            for t in meta.get("tools", []):
                fn = proxy._tools[t["alias"]]
                setattr(mod, t["alias"], fn)
                mod.TOOL_MAP[t["alias"]] = fn
            mod.__all__ = [t["alias"] for t in meta.get("tools", [])]
            sys.modules["mcp.servers." + alias] = mod
            setattr(servers_pkg, alias, mod)
            namespace["mcp_" + alias] = proxy
        namespace["mcp_servers"] = {n: namespace["mcp_" + state["servers"][n]["alias"]] for n in state["order"]}
        namespace["LOADED_MCP_SERVERS"] = tuple(state["order"])
        namespace["MCPError"] = MCPError
        for fn in helpers:
            namespace[fn.__name__] = fn

    return configure


_mcp_bridge_configure_impl = _mcp_bridge_install()


def _mcp_bridge_configure(state):
    _mcp_bridge_configure_impl(state, globals())


def _mcp_bridge_load_tool(name, source):
    try:
        exec(compile(source, "<saved tool %s>" % name, "exec"), globals())
    except Exception as e:  # a broken saved tool must not break the session
        import sys

        print("saved tool %s failed to load: %r" % (name, e), file=sys.stderr)


_mcp_bridge_configure({"servers": []})
del _mcp_bridge_install
