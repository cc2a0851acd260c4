# A tour of the discovery helpers of mcp.runtime, written for this project:
# every helper code written for the original bridge may call, with the
# arguments and result fields that code relies on. It prints one labelled
# line (or block) per helper; mcpbridge/proxy_test.go and
# integration/npm_test.go check the labels.
from mcp import runtime

print("configured:", runtime.discovered_servers())
print("loaded (cached):", runtime.list_servers_sync())
print("loaded (asked):", await runtime.list_servers())

loaded = runtime.list_loaded_server_metadata()
print("metadata:", loaded)

# What each loaded server offers, from the metadata the call already has.
for entry in loaded:
    server = runtime.describe_server(entry["name"])
    for t in server["tools"]:
        print("tool %s.%s: %s" % (server["alias"], t["alias"], t.get("description", "")))

# Documentation on demand: one line per tool first, then one tool in full.
if loaded:
    name = loaded[0]["name"]
    brief = await runtime.query_tool_docs(name)
    # The first entries only: the whole lists would fill the output budget.
    print("brief docs:", brief[:2])
    print("brief docs (sync):", runtime.query_tool_docs_sync(name)[:2])
    print("tool list (cached):", [t["name"] for t in runtime.list_tools_sync(name)])
    if brief:
        print("full doc:", await runtime.query_tool_docs(name, tool=brief[0]["toolAlias"], detail="full"))

# Ranked search over every configured server.
for hit in await runtime.search_tool_docs("add two numbers", limit=2):
    print("hit:", hit["signature"], "-", hit.get("summary", ""))
print("hits (sync):", runtime.search_tool_docs_sync("repeat a message back", limit=2))

print("summary:", runtime.capability_summary())
