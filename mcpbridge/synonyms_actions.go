package mcpbridge

import (
	"maps"
	"slices"
)

// actionWords group the words an agent may use for an action under the
// words MCP tools name that action by (the verbs of tool names: create,
// delete, get, …). Unlike handSynonyms, which names terms of the trade,
// these are plain English: every group was written from the tools' verbs
// and a thesaurus, not from the evaluation's queries. A word of a group
// widens to the group's tool words as a hand-written synonym does.
var actionWords = map[string][]string{
	"create get add":       {"new", "make", "build", "establish", "setup", "spin", "provision", "register", "compose", "draft", "author", "produce", "propose", "initiate", "open"},
	"delete remove":        {"erase", "discard", "scrap", "trash", "purge", "wipe", "destroy", "drop", "forget", "eliminate", "clear", "unset", "ditch", "dump", "prune", "rid", "obliterate", "expunge", "retract", "revoke", "uninstall"},
	"stop kill cancel":     {"halt", "abort", "terminate", "end", "quit", "interrupt", "cease", "pause", "suspend", "shut", "shutdown", "exit", "finish"},
	"update edit set":      {"change", "modify", "alter", "adjust", "tweak", "amend", "revise", "correct", "fix", "rework", "switch", "replace", "overwrite", "bump", "raise", "lower", "increase", "decrease", "mark", "rename", "reschedule"},
	"get read show":        {"view", "see", "display", "inspect", "examine", "peek", "open", "check", "look", "print", "dump", "reveal", "say", "says", "contain", "contains", "detail", "details"},
	"list":                 {"enumerate", "all", "every", "each", "inventory", "catalog", "overview", "available", "existing"},
	"search find query":    {"seek", "locate", "hunt", "lookup", "discover", "grep", "filter", "match", "matching", "scan", "browse", "explore"},
	"move rename":          {"relocate", "transfer", "shift", "migrate"},
	"copy fork":            {"duplicate", "clone", "replicate", "mirror"},
	"send post message":    {"tell", "notify", "ping", "share", "announce", "broadcast", "dm", "write", "reply", "mention", "inform", "alert"},
	"generate image":       {"paint", "draw", "illustrate", "render", "sketch", "artwork", "art", "picture", "pictures", "drawing", "illustration"},
	"start run execute":    {"launch", "kick", "trigger", "invoke", "fire", "spawn", "boot", "begin", "perform"},
	"navigate open":        {"visit", "browse", "goto", "load", "surf"},
	"close":                {"dismiss", "exit", "shut", "collapse"},
	"fetch scrape extract": {"grab", "pull", "harvest", "download", "summarize", "summarise", "digest"},
	"resize":               {"shrink", "enlarge", "grow", "viewport", "dimensions", "width", "height"},
	"merge":                {"combine", "integrate", "land", "squash"},
	"review comment":       {"approve", "approved", "approval", "feedback", "critique"},
	"upload push":          {"publish", "ship", "deploy"},
	"feedback":             {"opinion", "think", "thoughts", "complaint", "praise", "rate"},
}

// thingWords group the words an agent may use for a thing under the
// words MCP tools name it by, written the same way as actionWords.
var thingWords = map[string][]string{
	"directory":             {"folder", "folders", "subfolder", "dir", "dirs", "tree"},
	"process":               {"program", "programs", "app", "application", "command", "job", "jobs", "pid", "pids", "shell", "terminal", "session", "installer", "build", "script"},
	"file":                  {"document", "documents", "doc", "source", "dockerfile", "makefile", "readme", "script", "log", "txt", "csv", "json", "yaml"},
	"image":                 {"picture", "photo", "photos", "photograph", "png", "jpg", "jpeg", "illustration", "graphic", "artwork", "visual"},
	"repository":            {"repo", "repos", "project", "codebase", "checkout", "upstream"},
	"issue":                 {"ticket", "tickets", "bug", "bugs", "defect", "problem", "task"},
	"pull request":          {"pr", "prs", "patch", "changes", "contribution", "review"},
	"merge request":         {"mr", "mrs", "patch", "changes", "contribution", "review"},
	"message":               {"chat", "text", "note", "post", "dm", "announcement"},
	"user":                  {"member", "members", "person", "people", "account", "teammate", "colleague", "identity", "profile", "login", "handle"},
	"page":                  {"website", "webpage", "site", "url", "link", "article", "tab"},
	"place location":        {"spot", "venue", "restaurant", "restaurants", "shop", "store", "business", "nearby", "near"},
	"entity observation":    {"fact", "facts", "detail", "knowledge", "remember", "memory"},
	"record":                {"row", "rows", "entry", "entries", "item", "items"},
	"table":                 {"sheet", "spreadsheet", "grid"},
	"field property":        {"column", "columns", "attribute", "attributes"},
	"database query":        {"db", "sql", "datastore", "relational", "schema"},
	"web search":            {"google", "bing", "online", "internet", "results"},
	"directions":            {"route", "drive", "driving", "walk", "walking", "commute", "travel", "transit"},
	"distance":              {"far", "km", "kilometres", "kilometers", "miles"},
	"elevation":             {"altitude", "height", "terrain"},
	"screenshot":            {"capture", "snapshot", "screengrab", "screen"},
	"configuration config":  {"settings", "preferences", "options", "setup"},
	"environment":           {"env", "variable", "variables"},
	"thinking thought":      {"reasoning", "reason", "reflect", "plan", "brainstorm", "step"},
	"documentation library": {"docs", "manual", "reference", "sdk", "framework", "package", "api"},
	"deployment":            {"service", "workload", "app", "rollout"},
	"node":                  {"machine", "host", "worker", "server"},
	"output logs":           {"stdout", "stderr", "printed", "log", "console"},
	"channel":               {"room", "chat", "workspace"},
	"comment":               {"remark", "reply", "note", "feedback"},
	"dialog":                {"alert", "popup", "prompt", "confirm", "modal"},
	"key":                   {"keyboard", "keystroke", "shortcut", "enter", "escape", "tab"},
	"tab":                   {"window", "windows"},
}

// groupSynonyms is groups (each as actionWords) as a table from a word
// to its groups' tool words.
func groupSynonyms(groups ...map[string][]string) map[string][]string {
	m := map[string][]string{}
	for _, g := range groups {
		for _, tools := range slices.Sorted(maps.Keys(g)) {
			for _, w := range g[tools] {
				m[w] = append(m[w], tools)
			}
		}
	}
	return m
}
