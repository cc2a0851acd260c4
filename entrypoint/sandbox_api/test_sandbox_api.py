"""Unit tests of the sandbox API, entrypoint/sandbox_api/sandbox_api.py (standard library only).

Run them from the repository's root:

    python3 -m unittest discover -s entrypoint/sandbox_api -p 'test_*.py'

The runtime's module mcp_sandbox_runtime is played by a stand-in (FakeHost)
that records every RPC and answers it with a handler the test chooses. Each
test installs the API in a fresh namespace, as the bridge does in a fresh
interpreter, and takes the mcp modules it created out of sys.modules after.
InstallCodeTest ships this file as the runtime's prelude does
(entrypoint.go) and runs the bridge's install code (mcpbridge's
installCode) the way a new interpreter does.
"""

import asyncio
import contextlib
import glob
import inspect
import io
import json
import os
import sys
import types
import unittest
from contextlib import redirect_stderr

HERE = os.path.dirname(os.path.abspath(__file__))
API_PATH = os.path.join(HERE, "sandbox_api.py")
ROOT = os.path.dirname(os.path.dirname(HERE))
ENTRYPOINT_GO = os.path.join(ROOT, "entrypoint", "entrypoint.go")


class RPCError(Exception):
    """The runtime's error for an RPC the host refused."""


class FakeHost:
    """Plays mcp_sandbox_runtime: every rpc goes to self.handler(payload)."""

    def __init__(self):
        self.payloads = []
        self.handler = lambda payload: {}
        self.module = types.ModuleType("mcp_sandbox_runtime")
        self.module.RPCError = RPCError
        self.module.rpc_sync = self.rpc_sync
        self.module.rpc = self.rpc

    def rpc_sync(self, payload):
        if not isinstance(payload, dict):
            raise TypeError("an RPC payload must be a dict")
        self.payloads.append(payload)
        return self.handler(payload)

    async def rpc(self, payload):
        return self.rpc_sync(payload)


HOST = FakeHost()
sys.modules["mcp_sandbox_runtime"] = HOST.module
import sandbox_api as api  # noqa: E402  (needs the runtime's module first)


def run(coro):
    return asyncio.run(coro)


def param(name, annotation="str", required=False, kind="keyword_only", description=""):
    """A parameter as the bridge decodes it (servers.Param in mcpbridge/servers/params.go)."""
    return {"name": name, "kind": kind, "required": required, "annotation": annotation, "description": description}


def tool(name, alias=None, description="", params=()):
    return {"name": name, "alias": alias or name, "description": description, "input_schema": {}, "params": list(params)}


def server(name, alias=None, tools=(), description="", cwd=""):
    return {"name": name, "alias": alias or name, "description": description, "cwd": cwd, "tools": list(tools)}


ECHO = tool("echo", description="Echo the provided message", params=[param("message", required=True, description="the text")])
GET_SUM = tool("get-sum", alias="get_sum", params=[param("a", "int", True), param("b", "int", True)])
STUB = server("stub", tools=[ECHO, GET_SUM], description="a stub server", cwd="/srv")


def mcp_modules():
    return {k for k in sys.modules if k == "mcp" or k.startswith("mcp.")}


class APITest(unittest.TestCase):
    """Installs the API in a fresh namespace with a fresh host."""

    def setUp(self):
        before = mcp_modules()
        self.addCleanup(lambda: [sys.modules.pop(k) for k in mcp_modules() - before])
        HOST.payloads = []
        HOST.handler = lambda payload: {}
        self.ns = {"__name__": "__main__"}
        self.installed = api.bind_namespace(self.ns)
        self.runtime = sys.modules["mcp.runtime"]

    def answer(self, handler):
        HOST.handler = handler

    def configure(self, *servers):
        self.ns["_mcp_bridge_configure"]({"servers": list(servers)})


class PackageInstallTest(APITest):
    """runtime.install's pieces that need no pip: what it asks the host,
    and how pip's end becomes a summary or an InstallError."""

    def test_refusals_and_types(self):
        def refuse(payload):
            raise RPCError('requirement "-e .": not a PEP 508 requirement: pip options are not allowed')

        self.answer(refuse)
        with self.assertRaises(self.runtime.InstallError) as cm:
            self.runtime.install_sync("-e .")
        self.assertIn("pip options are not allowed", str(cm.exception))
        self.assertIsInstance(cm.exception, api.MCPError)
        self.assertEqual(HOST.payloads[-1]["type"], "install")
        self.assertEqual(HOST.payloads[-1]["requirements"], ["-e ."])
        with self.assertRaises(TypeError):
            self.runtime.install_sync(["numpy"])
        with self.assertRaises(self.runtime.InstallError):
            run(self.runtime.install("-e ."))

    def test_reports_pip_ended(self):
        # Once the host answered, the install reports its end whatever
        # happens (here: no install endpoint in this stand-in), so that
        # the host closes the endpoint before the call ends.
        import base64
        import zipfile

        empty = io.BytesIO()
        with zipfile.ZipFile(empty, "w") as z:
            z.writestr("pip/__init__.py", "")
        plan = {"requirements": ["x"], "target": "/nonexistent", "args": [], "wheel_name": "pip-0-py3-none-any.whl",
                "wheel": base64.b64encode(empty.getvalue()).decode()}
        self.answer(lambda payload: plan if payload.get("op") is None else {})
        old_dir = api.PIP_DIR
        import tempfile

        api.PIP_DIR = tempfile.mkdtemp()
        self.addCleanup(setattr, api, "PIP_DIR", old_dir)
        with self.assertRaises(self.runtime.InstallError):
            self.runtime.install_sync("x")
        self.assertEqual(HOST.payloads[-1], {"type": "install", "op": "ended"})
        HOST.payloads = []
        with self.assertRaises(self.runtime.InstallError):
            run(self.runtime.install("x"))
        self.assertEqual([p.get("op") for p in HOST.payloads], [None, "ended"])
        # A refused install (no plan) opened nothing: nothing to report.
        HOST.payloads = []

        def refuse(payload):
            raise RPCError("refused")

        self.answer(refuse)
        with self.assertRaises(self.runtime.InstallError):
            self.runtime.install_sync("x")
        self.assertEqual(len(HOST.payloads), 1)

    def test_pip_failures_and_success(self):
        plan = {"requirements": ["nosuchpkg>=2"], "target": "/opt/mcp-site"}
        with self.assertRaises(api.InstallError) as cm:
            api.install_done(plan, 1, "", "Looking in indexes\nERROR: Could not find a version\nERROR: No matching distribution found for nosuchpkg>=2\n")
        self.assertEqual(str(cm.exception), "installing nosuchpkg>=2: pip exited with 1: Could not find a version; No matching distribution found for nosuchpkg>=2")
        with self.assertRaises(api.InstallError) as cm:
            api.install_done(plan, 1, "", "OSError: [Errno 28] No space left on device\n")
        self.assertIn("the space for this session's installs (/opt/mcp-site) is full", str(cm.exception))
        import tempfile

        target = tempfile.mkdtemp()
        self.addCleanup(lambda: sys.path.remove(target) if target in sys.path else None)
        # A failed pip's leftovers go; what was there before stays.
        os.mkdir(os.path.join(target, "kept"))
        before = api.site_entries({"target": target})
        os.mkdir(os.path.join(target, "partial"))
        open(os.path.join(target, "partial", "blob.bin"), "wb").close()
        open(os.path.join(target, "stray.py"), "w").close()
        with self.assertRaises(api.InstallError):
            api.install_done({"requirements": ["x"], "target": target}, 2, "", "ERROR: disk\n", before)
        self.assertEqual(sorted(os.listdir(target)), ["kept"])
        done = api.install_done({"requirements": ["x"], "target": target}, 0, "Collecting x\nSuccessfully installed x-1.0\n", "")
        self.assertEqual(done, "Successfully installed x-1.0")
        self.assertIn(target, sys.path)


class InstallTest(APITest):
    def test_packages(self):
        pkg = sys.modules["mcp"]
        self.assertIs(pkg.runtime, self.runtime)
        self.assertIs(pkg.servers, sys.modules["mcp.servers"])
        self.assertIs(pkg.MCPError, api.MCPError)
        self.assertEqual(pkg.__path__, [])
        self.assertEqual(pkg.servers.__path__, [])
        names = {n for n in dir(self.runtime) if not n.startswith("__")}
        want = {fn.__name__ for fn in api.RUNTIME_HELPERS} | {"MCPError", "MCPArgumentError", "InstallError"}
        self.assertEqual(names, want)
        self.assertIs(self.runtime.MCPArgumentError, api.MCPArgumentError)

    def test_globals_before_any_server(self):
        names = {n for n in self.ns if not n.startswith("__")}
        helpers = {fn.__name__ for fn in api.GLOBAL_HELPERS}
        self.assertEqual(
            names,
            helpers | {"mcp", "MCPError", "LOADED_MCP_SERVERS", "mcp_servers", "_mcp_bridge_configure", "_mcp_bridge_load_tool"},
        )
        # As in the original, mcp.runtime needs no import.
        self.assertIs(self.ns["mcp"], sys.modules["mcp"])
        self.assertEqual(self.ns["LOADED_MCP_SERVERS"], ())
        self.assertEqual(self.ns["mcp_servers"], {})
        self.assertIs(self.ns["MCPError"], api.MCPError)
        self.assertEqual(HOST.payloads, [])

    def test_errors(self):
        # The original's proxies raised RuntimeError: code catching it still does.
        self.assertTrue(issubclass(api.MCPError, RuntimeError))
        self.assertTrue(issubclass(api.MCPArgumentError, api.MCPError))
        self.assertTrue(issubclass(api.MCPArgumentError, TypeError))
        self.assertEqual(api.MCPError.__module__, "mcp.runtime")
        self.assertEqual(api.MCPError.__qualname__, "MCPError")

    def test_signatures_and_docs_of_helpers(self):
        r = self.runtime
        self.assertEqual(str(inspect.signature(r.call_tool)), "(server, tool, arguments=None, **kwargs)")
        self.assertEqual(str(inspect.signature(r.search_tool_docs)), "(query, *, limit=5, detail='summary')")
        self.assertEqual(str(inspect.signature(r.search_tool_docs_sync)), "(query, *, limit=5, detail='summary')")
        self.assertEqual(str(inspect.signature(r.query_tool_docs)), "(server, tool=None, detail='summary')")
        self.assertEqual(str(inspect.signature(r.load_memory)), "(key, default=None)")
        self.assertTrue(inspect.iscoroutinefunction(r.list_servers))
        self.assertFalse(inspect.iscoroutinefunction(r.list_servers_sync))
        self.assertEqual(r.describe_server.__doc__, "The metadata of a loaded server: name, alias, description, cwd and tools.")
        self.assertIsNone(r.capability_summary.__doc__)


class ConfigureTest(APITest):
    def test_proxies_modules_and_globals(self):
        self.configure(STUB)
        proxy = self.ns["mcp_stub"]
        self.assertIsInstance(proxy, api.ServerProxy)
        self.assertEqual(repr(proxy), "<MCP server 'stub': 2 tools>")
        self.assertEqual(dir(proxy), ["echo", "get_sum"])
        self.assertIs(getattr(proxy, "get-sum"), proxy.get_sum)  # by name as well as by alias
        self.assertEqual(self.ns["LOADED_MCP_SERVERS"], ("stub",))
        self.assertEqual(self.ns["mcp_servers"], {"stub": proxy})
        mod = sys.modules["mcp.servers.stub"]
        self.assertIs(sys.modules["mcp.servers"].stub, mod)
        self.assertEqual(mod.__all__, ["echo", "get_sum"])
        self.assertEqual(mod.TOOL_MAP, {"echo": proxy.echo, "get_sum": proxy.get_sum})
        self.assertIs(mod.echo, proxy.echo)
        self.assertEqual(mod.TOOLS, [ECHO, GET_SUM])
        self.assertIsNot(mod.TOOLS[0], ECHO)

    def test_load_order_kept_across_configures(self):
        two = server("Stub Two", alias="stub_two")
        self.configure(two)
        self.configure(STUB, two)
        self.assertEqual(self.ns["LOADED_MCP_SERVERS"], ("Stub Two", "stub"))
        self.assertEqual(list(self.ns["mcp_servers"]), ["Stub Two", "stub"])
        self.assertEqual(self.runtime.list_servers_sync(), ("Stub Two", "stub"))
        self.assertEqual([m["name"] for m in self.runtime.list_loaded_server_metadata()], ["Stub Two", "stub"])

    def test_unknown_tool(self):
        self.configure(STUB)
        with self.assertRaises(AttributeError) as cm:
            self.ns["mcp_stub"].nope
        self.assertEqual(str(cm.exception), "MCP server 'stub' has no tool 'nope'; its tools: echo, get_sum")

    def test_describe_and_cached_tools(self):
        self.configure(STUB)
        want = {"name": "stub", "alias": "stub", "description": "a stub server", "cwd": "/srv", "tools": [ECHO, GET_SUM]}
        self.assertEqual(self.runtime.describe_server("stub"), want)
        self.runtime.describe_server("stub")["tools"][0]["name"] = "changed"
        self.assertEqual(self.runtime.list_tools_sync("stub"), [ECHO, GET_SUM])
        aliased = server("Stub Two", alias="stub_two")
        self.configure(aliased)
        self.assertEqual(self.runtime.describe_server("stub_two")["name"], "Stub Two")
        with self.assertRaises(api.MCPError) as cm:
            self.runtime.describe_server("nope")
        self.assertEqual(str(cm.exception), "Server 'nope' is not available: load it with the run_python 'servers' argument")

    def test_capability_summary(self):
        self.assertTrue(self.runtime.capability_summary().endswith("Loaded now: none."))
        self.configure(STUB)
        self.assertTrue(self.runtime.capability_summary().endswith("Loaded now: stub."))


class ToolProxyTest(APITest):
    def setUp(self):
        super().setUp()
        self.answer(lambda p: {"result": {"structuredContent": p.get("arguments")}})

    def call(self, fn, *args, **kwargs):
        return run(fn(*args, **kwargs))

    def test_signature_and_doc(self):
        t = tool(
            "read_text_file",
            description="  Read a file  ",
            params=[param("path", required=True), param("head", "float", description="first N lines"), param("get-x", "int", kind="extra")],
        )
        fn = api.tool_proxy("fs", t)
        self.assertEqual(fn.__name__, "read_text_file")
        self.assertEqual(fn.__qualname__, "read_text_file")
        self.assertEqual(str(inspect.signature(fn)), "(*, path: 'str', head: 'float' = None)")
        self.assertEqual(
            fn.__doc__,
            "Read a file\n\nMCP tool 'read_text_file' of server 'fs'.\n\nArguments:\n"
            "    path (str): \n    head (float, optional): first N lines\n    get-x (int, optional): ",
        )
        bare = api.tool_proxy("fs", tool("ping"))
        self.assertEqual(str(inspect.signature(bare)), "()")
        self.assertEqual(bare.__doc__, "fs.ping\n\nMCP tool 'ping' of server 'fs'.")

    def test_arguments_checked_before_the_call(self):
        fn = api.tool_proxy("stub", ECHO)
        cases = [
            ((), {}, "echo() is missing required argument(s): message"),
            ((), {"message": "a", "nope": 1}, "echo() got unknown argument(s) nope; its parameters are: message"),
            (("positional",), {}, "echo() takes keyword arguments only: message"),
            ((), {"arguments": 7}, "echo() takes arguments= as a dict"),
        ]
        for args, kwargs, want in cases:
            with self.assertRaises(api.MCPArgumentError) as cm:
                self.call(fn, *args, **kwargs)
            self.assertEqual(str(cm.exception), want)
        self.assertEqual(HOST.payloads, [])

    def test_arguments_sent(self):
        fn = api.tool_proxy("fs", tool("read", params=[param("path", required=True), param("head", "int")]))
        self.assertEqual(self.call(fn, path="/x"), {"path": "/x"})  # an optional None is not sent
        self.assertEqual(self.call(fn, arguments={"path": "/y"}, head=3), {"path": "/y", "head": 3})
        self.assertEqual(HOST.payloads[-1], {"type": "call_tool", "server": "fs", "tool": "read", "arguments": {"path": "/y", "head": 3}})
        self.assertEqual(self.call(fn, path=None), {"path": None})  # a required None is sent

    def test_a_parameter_called_arguments(self):
        fn = api.tool_proxy("s", tool("args", params=[param("arguments", "dict", True)]))
        self.assertEqual(self.call(fn, arguments={"x": 1}), {"arguments": {"x": 1}})

    def test_a_tool_without_parameters_takes_anything(self):
        fn = api.tool_proxy("s", tool("unreadable"))
        self.assertEqual(self.call(fn, anything=1), {"anything": 1})
        with self.assertRaises(api.MCPArgumentError) as cm:
            self.call(fn, 1)
        self.assertEqual(str(cm.exception), "unreadable() takes keyword arguments only: none")


class DeniedToolTest(APITest):
    """Tools the policy denies: in no list, but a call of one goes to the
    bridge, which refuses it (and audits it); the sandbox refuses nothing."""

    DENIAL = 'refused by the tool policy: stub.get-sum is denied: servers["stub"].deny "get-*" (in /p/policy.json)'

    def setUp(self):
        super().setUp()
        meta = server("stub", tools=[ECHO])
        meta["denied"] = {"get-sum": "get-sum", "get_sum": "get-sum", "crash": "crash"}
        self.configure(meta)
        self.proxy = self.ns["mcp_stub"]

    def refuse(self, message):
        def handler(payload):
            raise RPCError(message)

        self.answer(handler)

    def test_in_no_list(self):
        self.assertEqual(dir(self.proxy), ["echo"])
        self.assertEqual(repr(self.proxy), "<MCP server 'stub': 1 tools>")
        self.assertEqual([t["name"] for t in self.runtime.list_tools_sync("stub")], ["echo"])
        self.assertEqual([t["name"] for t in self.runtime.describe_server("stub")["tools"]], ["echo"])
        self.assertNotIn("denied", self.runtime.describe_server("stub"))
        mod = sys.modules["mcp.servers.stub"]
        self.assertEqual(mod.__all__, ["echo"])
        self.assertFalse(hasattr(mod, "get_sum"))

    def test_naming_one_gives_a_function_and_asks_nothing(self):
        # hasattr is True: the name is a function, whose call the bridge refuses.
        self.assertTrue(hasattr(self.proxy, "get_sum"))
        fn = self.proxy.get_sum
        self.assertTrue(inspect.iscoroutinefunction(fn))
        self.assertEqual(fn.__name__, "get_sum")
        self.assertIn("denies", fn.__doc__)
        self.assertTrue(callable(getattr(self.proxy, "get-sum")))
        self.assertFalse(hasattr(self.proxy, "nope"))
        self.assertEqual(HOST.payloads, [])

    def test_a_call_goes_to_the_bridge_which_refuses_it(self):
        self.refuse(self.DENIAL)
        for fn in (self.proxy.get_sum, getattr(self.proxy, "get-sum")):
            with self.assertRaises(api.MCPToolDenied) as cm:
                run(fn(a=1, arguments={"b": 2}))
            e = cm.exception
            self.assertIsInstance(e, api.MCPError)
            self.assertIsInstance(e, AttributeError)
            self.assertEqual(str(e), self.DENIAL)
            self.assertTrue(e.__suppress_context__)
        want = {"type": "call_tool", "server": "stub", "tool": "get-sum", "arguments": {"a": 1, "b": 2}}
        self.assertEqual(HOST.payloads, [want, want])
        # Caught as the AttributeError it was raised as before.
        self.refuse('refused by the tool policy: stub.crash is denied: servers["stub"].deny "crash"')
        with self.assertRaises(AttributeError):
            run(self.proxy.crash())
        self.assertEqual(HOST.payloads[-1], {"type": "call_tool", "server": "stub", "tool": "crash", "arguments": {}})

    def test_other_refusals_are_mcp_errors(self):
        for message in (
            "refused by the tool policy: more than 3 proxied tool calls in one run_python call (max_tool_calls)",
            "refused by the tool policy: stub.get-sum was declined by the user (decline)",
            "the call ended before the host answered",
        ):
            self.refuse(message)
            with self.assertRaises(api.MCPError) as cm:
                run(self.proxy.get_sum())
            self.assertNotIsInstance(cm.exception, api.MCPToolDenied)
            self.assertEqual(str(cm.exception), message)

    def test_a_call_the_bridge_lets_through_returns_its_result(self):
        # The policy may have changed since: the bridge decides.
        self.answer(lambda p: {"result": {"structuredContent": {"sum": 3}}})
        self.assertEqual(run(self.proxy.get_sum(a=1, b=2)), {"sum": 3})

    def test_arguments_are_keywords(self):
        with self.assertRaises(api.MCPArgumentError) as cm:
            run(self.proxy.get_sum(1, 2))
        self.assertEqual(str(cm.exception), "get_sum() takes keyword arguments only: none")
        self.assertEqual(HOST.payloads, [])


class CallToolTest(APITest):
    def test_results(self):
        results = [
            ({"structuredContent": {"sum": 5}, "content": [{"type": "text", "text": "5"}]}, {"sum": 5}),
            ({"content": [{"type": "text", "text": "hi"}]}, "hi"),
            ({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "a\nb"),
            ({"content": [{"type": "image", "data": "x"}]}, [{"type": "image", "data": "x"}]),
            ({}, []),
            (None, []),
        ]
        for result, want in results:
            self.answer(lambda p, r=result: {"result": r})
            self.assertEqual(run(self.runtime.call_tool("s", "t", {"a": 1}, b=2)), want)
        self.assertEqual(HOST.payloads[0], {"type": "call_tool", "server": "s", "tool": "t", "arguments": {"a": 1, "b": 2}})

    def test_tool_error(self):
        self.answer(lambda p: {"result": {"isError": True, "content": [{"type": "text", "text": "no such file: /x"}]}})
        with self.assertRaises(api.MCPError) as cm:
            run(self.runtime.call_tool("stub", "read_text_file"))
        self.assertEqual(str(cm.exception), "stub.read_text_file failed: no such file: /x")
        self.answer(lambda p: {"result": {"isError": True}})
        with self.assertRaisesRegex(api.MCPError, r"^stub\.t failed: error$"):
            run(self.runtime.call_tool("stub", "t"))

    def test_code_line(self):
        """A call made from run_python code names its line; one from a
        task of asyncio.gather (no such frame on its stack) does not."""
        self.answer(lambda p: {"result": {"content": [{"type": "text", "text": "ok"}]}})
        self.configure(STUB)
        source = "async def main():\n    a = 1\n    return await mcp_stub.get_sum(a=a, b=2)\n"
        exec(compile(source, "<run_python#7>", "exec"), self.ns)
        self.assertEqual(run(self.ns["main"]()), "ok")
        self.assertEqual(HOST.payloads[-1]["line"], 3)
        exec(compile("async def other():\n    return await mcp.runtime.call_tool('stub', 'echo', message='x')\n", "<elsewhere>", "exec"), self.ns)
        run(self.ns["other"]())
        self.assertNotIn("line", HOST.payloads[-1])

    def test_host_refusal_is_mcp_error(self):
        def refuse(p):
            raise RPCError("Server 'nope' is not available")

        self.answer(refuse)
        for call in (lambda: run(self.runtime.call_tool("nope", "x")), lambda: self.runtime.discovered_servers()):
            with self.assertRaises(api.MCPError) as cm:
                call()
            self.assertEqual(str(cm.exception), "Server 'nope' is not available")
            self.assertTrue(cm.exception.__suppress_context__)


class ResultShapeTest(APITest):
    def test_json_text(self):
        """A text result that is a JSON object or array is a str that also
        parses: every str behaviour kept, .json() parsed once."""
        self.answer(lambda p: {"result": {"content": [{"type": "text", "text": ' {"items": [1, 2], "next": null}'}]}})
        r = run(self.runtime.call_tool("s", "t"))
        self.assertIsInstance(r, str)
        self.assertIsNot(type(r), str)
        self.assertEqual(r, ' {"items": [1, 2], "next": null}')
        self.assertEqual(r[:3], ' {"')
        self.assertEqual(json.loads(r), {"items": [1, 2], "next": None})
        self.assertEqual(r.json(), {"items": [1, 2], "next": None})
        self.assertIs(r.json(), r.json())
        for text in ("hello", "42", "{not json", ""):
            self.answer(lambda p, t=text: {"result": {"content": [{"type": "text", "text": t}]}})
            self.assertIs(type(run(self.runtime.call_tool("s", "t"))), str, text)

    def test_warnings_on_stderr(self):
        self.answer(lambda p: {"result": {"structuredContent": {"a": 1}}, "warnings": ["s.t returned a result that does not match its output schema: at /a"]})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(run(self.runtime.call_tool("s", "t")), {"a": 1})
        self.assertEqual(err.getvalue(), "warning: s.t returned a result that does not match its output schema: at /a\n")

    def test_returns_in_signature_and_doc(self):
        declared = dict(tool("list", params=[param("q", required=True)]), returns='{"items": list[{"id": int}], "next"?: str | None}')
        fn = api.tool_proxy("gh", declared)
        self.assertEqual(str(inspect.signature(fn)), '(*, q: \'str\') -> {"items": list[{"id": int}], "next"?: str | None}')
        self.assertTrue(fn.__doc__.endswith('\n\nReturns: {"items": list[{"id": int}], "next"?: str | None}'), fn.__doc__)
        seen = dict(tool("env"), returns="dict[str, str]", returns_observed=3)
        fn = api.tool_proxy("e", seen)
        self.assertEqual(str(inspect.signature(fn)), "() -> dict[str, str]")
        self.assertTrue(fn.__doc__.endswith("\n\nReturns (observed in 3 calls): dict[str, str]"), fn.__doc__)
        unshown = dict(tool("odd"), returns="(not shown: a schema is a string, not an object)")
        fn = api.tool_proxy("e", unshown)
        self.assertEqual(str(inspect.signature(fn)), "()")
        self.assertIn("Returns: (not shown", fn.__doc__)

    def test_stubs(self):
        self.answer(lambda p: {"stubs": "# MCP server 'gh'\n"})
        self.assertEqual(self.runtime.stubs("gh"), "# MCP server 'gh'\n")
        self.assertEqual(HOST.payloads[-1], {"type": "stubs", "server": "gh"})


class DiscoveryAndDocsTest(APITest):
    def test_discovered_servers(self):
        servers = [{"name": "a", "description": "A", "cwd": ""}, {"name": "b", "description": "", "cwd": "/b"}]
        self.answer(lambda p: {"servers": servers})
        self.assertEqual(self.runtime.discovered_servers(), ("a", "b"))
        self.assertEqual(self.runtime.discovered_servers(detailed=True), tuple(servers))
        self.assertEqual(HOST.payloads[0], {"type": "discovered_servers"})

    def test_list_servers_and_tools_from_the_host(self):
        self.answer(lambda p: {"servers": ["b", "a"]} if p["type"] == "list_servers" else {"tools": [{"name": "t"}]})
        self.assertEqual(run(self.runtime.list_servers()), ("b", "a"))
        self.assertEqual(run(self.runtime.list_tools("a")), [{"name": "t"}])
        self.assertEqual(HOST.payloads[1], {"type": "list_tools", "server": "a"})

    def test_query_tool_docs(self):
        docs = [{"tool": "echo"}, {"tool": "get-sum"}]
        self.answer(lambda p: {"docs": docs[:1] if p["tool"] else docs})
        self.assertEqual(run(self.runtime.query_tool_docs("stub")), docs)
        self.assertEqual(self.runtime.query_tool_docs_sync("stub", "echo", detail="full"), {"tool": "echo"})
        self.assertEqual(
            HOST.payloads,
            [
                {"type": "query_tool_docs", "server": "stub", "tool": "", "detail": "summary"},
                {"type": "query_tool_docs", "server": "stub", "tool": "echo", "detail": "full"},
            ],
        )

    def test_search_tool_docs(self):
        self.answer(lambda p: {"results": [{"tool": "read_text_file"}]})
        self.assertEqual(run(self.runtime.search_tool_docs("read a file")), [{"tool": "read_text_file"}])
        self.runtime.search_tool_docs_sync(42, limit="3", detail="full")
        self.assertEqual(
            HOST.payloads,
            [
                {"type": "search_tool_docs", "query": "read a file", "limit": api.SEARCH_LIMIT, "detail": "summary"},
                {"type": "search_tool_docs", "query": "42", "limit": 3, "detail": "full"},
            ],
        )

    def test_search_notes(self):
        self.answer(lambda p: {"results": [{"tool": "echo"}], "notes": ["server 'x' was not searched: boom"]})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            hits = self.runtime.search_tool_docs_sync("say it")
        self.assertEqual(hits, [{"tool": "echo"}])
        self.assertIsInstance(hits, list)
        self.assertEqual(hits.notes, ("server 'x' was not searched: boom",))
        self.assertEqual(err.getvalue(), "search_tool_docs: server 'x' was not searched: boom\n")
        self.answer(lambda p: {"results": []})
        self.assertEqual(self.runtime.search_tool_docs_sync("nothing").notes, ())

    def test_detail_and_limit_as_the_original_reads_them(self):
        # detail: 'full' in any case, anything else 'summary'; limit: a
        # whole number of at least 1, else the default.
        self.answer(lambda p: {"docs": [], "results": []})
        r = self.runtime
        r.query_tool_docs_sync("s", detail="everything")
        r.query_tool_docs_sync("s", detail="FULL")
        run(r.query_tool_docs("s", detail=None))
        r.search_tool_docs_sync("q", limit=None, detail="Full")
        run(r.search_tool_docs("q", limit="many", detail="all"))
        r.search_tool_docs_sync("q", limit=0)
        r.search_tool_docs_sync("q", limit=50)
        self.assertEqual([(p.get("detail"), p.get("limit")) for p in HOST.payloads], [
            ("summary", None), ("full", None), ("summary", None),
            ("full", api.SEARCH_LIMIT), ("summary", api.SEARCH_LIMIT), ("summary", 1), ("summary", 50),
        ])
        with self.assertRaises(api.MCPError) as cm:
            r.query_tool_docs_sync("s", tool=5)
        self.assertEqual(str(cm.exception), "'tool' must be a string when provided")


class ToolResultsTest(APITest):
    """MCP_BRIDGE_TOOL_RESULTS: simple (the default) or raw, the original's
    whole CallToolResult."""

    RESULTS = [
        # (what the host relays, what simple returns, what raw returns)
        (
            {"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}},
            {"sum": 5},
            {"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}, "isError": False},
        ),
        ({"content": [{"type": "text", "text": "hi"}]}, "hi", {"content": [{"type": "text", "text": "hi"}], "isError": False}),
        (
            {"_meta": {"k": 1}, "content": [{"type": "image", "data": "eA==", "mimeType": "image/png"}], "extra": "x"},
            [{"type": "image", "data": "eA==", "mimeType": "image/png"}],
            {"_meta": {"k": 1}, "content": [{"type": "image", "data": "eA==", "mimeType": "image/png"}], "isError": False, "extra": "x"},
        ),
        ({}, [], {"content": [], "isError": False}),
        (None, [], {"content": [], "isError": False}),
    ]

    def configure_mode(self, mode):
        self.ns["_mcp_bridge_configure"]({"servers": [STUB], "tool_results": mode})

    def test_simple_is_the_default(self):
        self.configure(STUB)
        self.assertEqual(self.installed.tool_results, "simple")
        for relayed, simple, _ in self.RESULTS:
            self.answer(lambda p, r=relayed: {"result": r})
            self.assertEqual(run(self.runtime.call_tool("stub", "echo", {"message": "m"})), simple)

    def test_raw(self):
        self.configure_mode("raw")
        for relayed, _, raw in self.RESULTS:
            self.answer(lambda p, r=relayed: {"result": r})
            self.assertEqual(run(self.runtime.call_tool("stub", "echo", {"message": "m"})), raw)
            got = run(self.ns["mcp_stub"].echo(message="m"))
            self.assertEqual(got, raw)
            self.assertEqual(list(got), list(raw))  # the original's key order
        # A later configure without the setting keeps it.
        self.configure(STUB)
        self.assertEqual(self.installed.tool_results, "raw")

    def test_raw_returns_errors(self):
        self.configure_mode("raw")
        error = {"content": [{"type": "text", "text": "no such file: /x"}], "isError": True}
        self.answer(lambda p: {"result": error})
        self.assertEqual(run(self.ns["mcp_stub"].echo(message="m")), error)
        self.configure_mode("simple")
        with self.assertRaisesRegex(api.MCPError, r"^stub\.echo failed: no such file: /x$"):
            run(self.ns["mcp_stub"].echo(message="m"))

    def test_raw_keeps_refusals_as_errors(self):
        self.configure_mode("raw")

        def refuse(p):
            raise RPCError("Server 'nope' is not available")

        self.answer(refuse)
        with self.assertRaisesRegex(api.MCPError, "not available"):
            run(self.runtime.call_tool("nope", "x"))
        with self.assertRaises(api.MCPArgumentError):
            run(self.ns["mcp_stub"].echo())


class OriginalProxyHelpersTest(APITest):
    def test_proxy_list_tools(self):
        self.configure(STUB)
        self.answer(lambda p: {"tools": [{"name": "echo"}]})
        self.assertEqual(run(self.ns["mcp_stub"].list_tools()), [{"name": "echo"}])
        self.assertEqual(HOST.payloads, [{"type": "list_tools", "server": "stub"}])
        self.assertEqual(dir(self.ns["mcp_stub"]), ["echo", "get_sum"])
        # A tool called list_tools wins.
        self.configure(server("lister", tools=[tool("list_tools")]))
        self.answer(lambda p: {"result": {"content": [{"type": "text", "text": "the tool"}]}})
        self.assertEqual(run(self.ns["mcp_lister"].list_tools()), "the tool")

    def test_list_tools_sync_needs_a_server(self):
        with self.assertRaises(api.MCPError) as cm:
            self.runtime.list_tools_sync()
        self.assertEqual(str(cm.exception), "list_tools_sync(server) requires a server name")


class MemoryTest(APITest):
    def test_requests(self):
        answers = {"save": {"key": "k"}, "load": {"value": [1]}, "delete": True, "list": ["k"], "exists": False, "info": None}
        self.answer(lambda p: answers.get(p["op"]))
        ns = self.ns
        self.assertEqual(ns["save_memory"]("k", [1], metadata={"by": "t"}), {"key": "k"})
        self.assertEqual(ns["load_memory"]("k"), [1])
        self.assertIs(ns["delete_memory"]("k"), True)
        self.assertEqual(ns["list_memories"](), ["k"])
        self.assertIs(ns["memory_exists"]("k"), False)
        self.assertIsNone(ns["get_memory_info"]("k"))
        self.assertEqual(HOST.payloads[0], {"type": "memory", "op": "save", "key": "k", "value": [1], "metadata": {"by": "t"}})
        self.assertEqual(HOST.payloads[1], {"type": "memory", "op": "load", "key": "k"})
        self.assertEqual(HOST.payloads[3], {"type": "memory", "op": "list", "key": ""})

    def test_load_default_and_empty_list(self):
        self.answer(lambda p: None)
        self.assertEqual(self.ns["load_memory"]("gone", "default"), "default")
        self.assertEqual(self.ns["list_memories"](), [])

    def test_values_must_be_json(self):
        for call in (lambda: self.ns["save_memory"]("k", object()), lambda: self.ns["update_memory"]("k", 1, metadata={1j})):
            with self.assertRaisesRegex(TypeError, "^memory values must be JSON-serializable: "):
                call()
        self.assertEqual(HOST.payloads, [])


def doubled(x):
    """Doubles x."""
    return 2 * x


class SavedToolTest(APITest):
    def test_save_tool_sends_the_source(self):
        class Holder:
            def method(self):
                return 1

        self.assertEqual(self.ns["save_tool"](doubled), "doubled")
        self.assertEqual(HOST.payloads[-1], {"type": "save_tool", "name": "doubled", "source": inspect.getsource(doubled)})
        self.ns["save_tool"](Holder.method)
        self.assertTrue(HOST.payloads[-1]["source"].startswith("def method(self):\n"))  # dedented

    def test_save_tool_refusals(self):
        with self.assertRaisesRegex(TypeError, "save_tool takes a function"):
            self.ns["save_tool"](7)
        made = {}
        exec("def nowhere():\n    pass\n", made)
        with self.assertRaisesRegex(api.MCPError, "^cannot read the source of nowhere: "):
            self.ns["save_tool"](made["nowhere"])

    def test_load_tool(self):
        self.ns["_mcp_bridge_load_tool"]("triple", "def triple(x):\n    return 3 * x\n")
        self.assertEqual(self.ns["triple"](2), 6)
        err = io.StringIO()
        with redirect_stderr(err):
            self.ns["_mcp_bridge_load_tool"]("broken", "def broken(:\n")
            self.ns["_mcp_bridge_load_tool"]("raises", "raise RuntimeError('at load')\n")
        self.assertIn("saved tool broken failed to load: SyntaxError(", err.getvalue())
        self.assertIn("saved tool raises failed to load: RuntimeError('at load')", err.getvalue())


def go_const(path, name):
    """The raw string of the Go const name in the file path."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index("const %s = `" % name) + len("const %s = `" % name)
    return text[start : text.index("`", start)]


def install_code():
    """The Go const installCode of mcpbridge, as the bridge sends it."""
    for path in sorted(glob.glob(os.path.join(ROOT, "mcpbridge", "**", "*.go"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            if "const installCode = `__import__" in f.read():
                return go_const(path, "installCode")
    raise AssertionError("no const installCode in mcpbridge")


def ship_api():
    """Runs the runtime's prelude (the Go const prelude of entrypoint.go)
    with this file as the only module sent, as runtimeProgram ships it;
    returns the finder it put first on sys.meta_path."""
    with open(API_PATH, encoding="utf-8") as f:
        source = f.read()
    table = "    %s: (%s, %s, True),\n" % (json.dumps("mcp_sandbox_api"), json.dumps("<mcp-sandbox-api>"), json.dumps(source))
    exec(compile(go_const(ENTRYPOINT_GO, "prelude") % table, "<prelude>", "exec"), {"__name__": "__mcp_runtime__"})
    return sys.meta_path[0]


# API_NAMES are the names the install code leaves in the user's globals
# before any server is loaded: the helper API users rely on.
API_NAMES = {
    "_mcp_bridge_configure", "_mcp_bridge_load_tool", "mcp", "mcp_servers", "LOADED_MCP_SERVERS", "MCPError",
    "save_memory", "load_memory", "update_memory", "delete_memory", "list_memories", "memory_exists",
    "get_memory_info", "save_tool",
}


class InstallCodeTest(unittest.TestCase):
    """Ships this file as the runtime does and runs the bridge's install
    code on it, as a new interpreter does."""

    def setUp(self):
        before = mcp_modules()
        self.addCleanup(lambda: [sys.modules.pop(k) for k in mcp_modules() - before])
        finder = ship_api()
        self.addCleanup(sys.meta_path.remove, finder)
        self.addCleanup(sys.modules.pop, "mcp_sandbox_api", None)
        self.ns = {"__name__": "__main__"}
        exec(compile(install_code(), "<init>", "exec"), self.ns)

    def test_leaves_only_the_api(self):
        self.assertEqual(set(self.ns) - {"__name__", "__builtins__"}, API_NAMES)
        self.assertEqual(sys.modules["mcp.runtime"].call_tool.__module__, "mcp_sandbox_api")
        self.assertEqual(sys.modules["mcp_sandbox_api"].call_tool.__code__.co_filename, "<mcp-sandbox-api>")

    def test_tracebacks_show_the_api_source(self):
        import traceback

        self.ns["_mcp_bridge_configure"]({"servers": [STUB]})
        try:
            run(self.ns["mcp_stub"].echo())
        except TypeError as e:  # MCPArgumentError
            text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        self.assertIn('File "<mcp-sandbox-api>"', text)
        self.assertIn("raise MCPArgumentError(", text)
        self.assertTrue(text.endswith("mcp.runtime.MCPArgumentError: echo() is missing required argument(s): message\n"), text)


if __name__ == "__main__":
    unittest.main()
