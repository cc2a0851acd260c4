# The "Inspect Available Servers" example of the original's newest README,
# line breaks restored, otherwise verbatim.
from mcp import runtime

print("Discovered:", runtime.discovered_servers())
print("Cached servers:", runtime.list_servers_sync())
print("Loaded metadata:", runtime.list_loaded_server_metadata())
print("Selectable via RPC:", await runtime.list_servers())

# Peek at tool docs for a server that's already loaded in this run
loaded = runtime.list_loaded_server_metadata()
if loaded:
    first = runtime.describe_server(loaded[0]["name"])
    for tool in first["tools"]:
        print(tool["alias"], "→", tool.get("description", ""))

# Ask for summaries or full schemas only when needed
if loaded:
    summaries = await runtime.query_tool_docs(loaded[0]["name"])
    detailed = await runtime.query_tool_docs(
        loaded[0]["name"],
        tool=summaries[0]["toolAlias"],
        detail="full",
    )
    print("Summaries:", summaries)
    print("Cached tools:", runtime.list_tools_sync(loaded[0]["name"]))
    print("Detailed doc:", detailed)

# Fuzzy search across loaded servers without rehydrating every schema
results = await runtime.search_tool_docs("calendar events", limit=3)
for result in results:
    print(result["server"], result["tool"], result.get("description", ""))

# Synchronous helpers for quick answers without extra awaits
print("Capability summary:", runtime.capability_summary())
print("Docs from cache:", runtime.query_tool_docs_sync(loaded[0]["name"]) if loaded else [])
print("Search from cache:", runtime.search_tool_docs_sync("calendar"))
