package mcpbridge

// conceptWords group the everyday words, jargon, abbreviations and idioms
// an agent or its user may use for a need under the words MCP tools use
// for it, as actionWords does for actions: a word of a group widens to the
// group's tool words (the key's words, each found in some recorded tool's
// name, title or description). They were written by hand from the tools'
// lists of the search evaluation's 29 servers, never from the evaluation's
// queries, in three passes by three authors over the first 23 servers
// (concept by concept; each tool phrased five ways without its own words;
// ten task situations a server) and a fourth, by all three methods, over
// the six recorded later; they name those servers' concepts, and
// help other servers where those use the same words. NoConcepts leaves them
// out (the ablation in search_report_test.go).
var conceptWords = map[string][]string{
	// Airtable: bases, tables, records, fields, comments, attachments.
	"base tables":       {"workbook", "workbooks", "airtable"},
	"records table":     {"crm", "lead", "leads", "contacts", "roster", "ledger", "waitlist"},
	"field fields":      {"cell", "cells", "datatype"},
	"describe schema":   {"ddl", "layout", "introspect", "introspection"},
	"filter":            {"criteria", "criterion", "conditions", "subset", "narrow"},
	"sorted":            {"order", "ordered", "ascending", "descending"},
	"comment comments":  {"discuss", "discussion", "chime"},
	"upload attachment": {"enclose", "enclosure", "filechooser"},

	// AWS knowledge base retrieval.
	"retrieval kb aws": {"rag", "embedding", "embeddings", "vectorstore", "grounding", "corpus", "amazon", "bedrock"},

	// Web search (Brave, Exa, Tavily, Firecrawl).
	"web search":                        {"websearch", "serp", "duckduckgo", "ddg", "searchengine", "neural", "weather", "forecast", "scores", "bitcoin", "crypto"},
	"news recent events":                {"today", "breaking", "happening", "happened", "trending", "press", "journalism", "nowadays", "realtime", "uptodate"},
	"blog articles":                     {"substack", "newsletter", "newsletters", "editorial", "essay", "essays"},
	"local businesses":                  {"cafe", "cafes", "coffee", "pub", "bakery", "pizza", "diner", "eatery", "food", "lunch", "dinner", "brunch", "sushi", "burger", "tacos", "bistro", "takeout", "brewery", "ramen"},
	"businesses services":               {"pharmacy", "hotel", "hotels", "gym", "dentist", "plumber", "grocery", "supermarket", "salon", "mechanic", "vet", "veterinarian", "clinic", "doctor", "hospital", "barber", "barbershop", "drugstore", "chemist", "hairdresser", "laundromat", "florist", "locksmith", "electrician", "atm"},
	"local near":                        {"closest", "nearest", "neighborhood", "neighbourhood", "vicinity", "downtown"},
	"ratings":                           {"stars", "yelp", "tripadvisor"},
	"opening hours":                     {"closing", "closes", "timetable", "tonight"},
	"phone numbers":                     {"telephone", "tel", "dial"},
	"pagination offset":                 {"paging", "paged", "cursor"},
	"companies company":                 {"startup", "startups", "firm", "firms", "corporation", "enterprise", "vendor", "vendors", "competitor", "competitors", "crunchbase", "rival", "rivals"},
	"people linkedin profiles founders": {"bio", "biography", "cv", "ceo", "cto", "cofounder", "executive", "executives", "employee", "employees", "recruiter", "headhunter"},
	"clean markdown":                    {"readable", "reader", "plaintext", "distill", "declutter"},
	"markdown":                          {"md", "commonmark", "gfm", "mdx", "richtext"},
	"summary":                           {"tldr", "gist", "synopsis", "recap", "nutshell", "abridged"},

	// Context7: library documentation.
	"documentation code examples":   {"howto", "tutorial", "tutorials", "syntax", "sample", "samples", "cookbook", "recipe", "signature"},
	"library package":               {"npm", "pypi", "crate", "gem", "dependency", "dependencies", "module"},
	"framework programming library": {"react", "nextjs", "django", "angular", "flask", "rails", "laravel", "svelte", "tailwind", "pandas", "numpy", "fastapi", "prisma", "supabase", "pydantic", "vue", "nuxt", "nestjs", "langchain", "pytorch", "tensorflow", "sqlalchemy", "vite", "redux", "axios", "lodash", "zod", "tanstack", "drizzle", "mongoose", "sveltekit", "htmx", "expressjs", "sklearn", "scikit", "matplotlib", "keras", "useeffect", "usestate"},
	"resolve":                       {"disambiguate", "identify", "canonicalize"},

	// Desktop Commander: configuration, files, search, processes.
	"allowed directories":    {"allowlist", "whitelist", "sandbox", "permitted", "roots"},
	"blocked commands":       {"blocklist", "blacklist", "denylist", "forbidden", "banned", "disallowed"},
	"telemetry":              {"privacy", "diagnostics", "optout"},
	"shell terminal":         {"zsh", "sh", "powershell", "pwsh", "cmd", "cli", "commandline", "bash"},
	"operating system":       {"os", "uname", "kernel", "macos", "osx", "ubuntu", "debian"},
	"filesystem":             {"fs", "disk", "hdd", "ssd", "harddrive", "laptop", "computer", "localdisk"},
	"desktop":                {"pc", "workstation", "mycomputer"},
	"pdf":                    {"acrobat", "printable", "ebook", "brochure", "handout", "flyer"},
	"excel sheets":           {"worksheet", "worksheets", "pivot", "xlsx", "msexcel", "gsheet"},
	"docx":                   {"msword", "libreoffice", "wordprocessing", "winword"},
	"append":                 {"tack", "concatenate", "concat"},
	"write":                  {"jot", "scribble", "persist"},
	"create directory":       {"mkdir", "mkdirs", "mkdirp"},
	"listing directory":      {"ls", "dirlist", "lsdir"},
	"tree recursive":         {"hierarchy", "hierarchical", "nesting"},
	"size sizes":             {"gb", "gigabytes", "megabytes", "footprint", "huge", "bloat", "bloated", "heavy", "storage", "du", "biggest", "large"},
	"rename":                 {"retitle", "relabel", "rebrand"},
	"move":                   {"reorganize", "reorganise", "rehome"},
	"glob pattern":           {"wildcard", "wildcards", "asterisk", "fnmatch"},
	"regex regular":          {"regexp", "pcre", "lookahead"},
	"content search":         {"ripgrep", "rg", "fulltext", "occurrence"},
	"metadata":               {"stat", "mtime", "ctime", "filesize", "owner", "lastmodified"},
	"modified creation time": {"timestamp", "dated", "age", "mtime", "ctime"},
	"permissions":            {"chmod", "chown", "writable", "rwx", "perms", "owns", "ownership"},
	"replace replacement":    {"substitute", "substitution", "swap", "refactor", "reword", "sed"},
	"diff":                   {"delta", "difference", "differences", "changeset", "unidiff"},
	"repl interactive":       {"interpreter", "ipython", "jupyter", "irb", "stdin", "pipe", "python"},
	"kill terminate force":   {"nuke", "sigkill", "sigterm", "pkill", "killall", "taskkill", "zombie", "runaway"},
	"terminate stuck":        {"hung", "hang", "hanging", "frozen", "freeze", "unresponsive", "wedged", "stalled", "deadlock"},
	"processes cpu":          {"ram", "hog", "hogging", "top", "htop", "ps", "tasklist", "taskmgr", "utilization", "slow", "sluggish", "leak"},
	"sessions":               {"tmux", "tty", "ttys", "detached", "backgrounded"},
	"usage statistics":       {"counters", "dashboard", "breakdown", "kpi", "kpis", "analytics", "frequency", "activity"},
	"history recent":         {"past", "previously", "ago", "audit", "trail", "lately", "yesterday", "earlier"},
	"recent calls history":   {"invocations", "invocation", "transcript"},
	"feedback survey":        {"complain", "complaining", "kudos", "testimonial", "nps", "grievance", "dislike"},
	"onboarding prompts":     {"walkthrough", "tour", "welcome", "intro", "introduction", "beginner", "newbie"},
	"organize organized":     {"declutter", "arrange", "categorize", "categorise", "tidy", "sort"},
	"health system":          {"vitals", "checkup", "sysinfo", "diagnose", "healthy"},
	"head":                   {"beginning", "preview", "topmost"},
	"tail":                   {"bottom", "trailing", "ending"},
	"encoding encodings":     {"utf8", "utf", "ascii", "unicode", "charset", "latin1", "mojibake"},
	"audio":                  {"sound", "mp3", "wav", "music", "song", "podcast", "ogg", "flac", "recording"},
	"mime":                   {"mimetype", "contenttype", "filetype"},
	"base64":                 {"b64", "blob", "encode", "bytes"},

	// EverArt: image generation.
	"generate images":  {"dalle", "midjourney", "txt2img", "text2image", "imagine", "visualize", "visualise", "depict", "conjure", "logo", "mockup", "thumbnail", "sprite"},
	"image images":     {"wallpaper", "poster", "banner", "portrait", "meme", "sticker", "avatar"},
	"photorealistic":   {"realistic", "lifelike", "photoreal", "hyperrealistic"},
	"vector art style": {"flat", "clipart", "cartoon", "anime"},
	"ultra quality":    {"hd", "4k", "8k", "hires", "highres", "uhd"},

	// Everything: the reference server's test tools.
	"echo":                    {"parrot", "loopback", "roundtrip", "repeat"},
	"annotations annotated":   {"labelled", "labeled", "tagged", "marked"},
	"environment variables":   {"printenv", "dotenv", "envvar", "envvars", "setenv", "vars"},
	"links link":              {"hyperlink", "hyperlinks", "href", "hrefs", "uri", "uris", "backlinks"},
	"structured schema":       {"jsonschema", "parseable", "tabular", "typed", "shape"},
	"sum":                     {"plus", "addition", "arithmetic", "calculator", "math", "maths", "compute", "summation", "tally", "total"},
	"calculate":               {"compute", "computing", "calc", "estimate"},
	"tiny image logo":         {"mini", "icon", "favicon", "emblem", "mascot"},
	"gzip compression":        {"zip", "archive", "tar", "tarball", "targz", "gz", "deflate", "squeeze", "pack"},
	"logging":                 {"verbosity", "loglevel", "logger", "tracing", "syslog"},
	"toggle":                  {"flip", "activate", "deactivate", "mute", "unmute", "switch"},
	"subscription subscriber": {"unsubscribe", "listen", "listener", "pubsub"},
	"long operation":          {"lengthy", "async", "asynchronous", "timeconsuming", "longrunning", "slow"},
	"progress":                {"percent", "percentage", "progressbar", "eta"},
	"simulated demonstrates":  {"mock", "dummy", "demo", "synthetic", "placeholder", "toy"},
	"research deep":           {"investigate", "investigation", "deepdive", "dossier", "thorough", "indepth"},
	"synthesizes gathers":     {"consolidate", "aggregate", "collate"},

	// Firecrawl: scraping, crawling, maps, monitors, papers, credits.
	"scrape extract":            {"rip", "webscraping", "webscrape", "scraper", "screenscrape"},
	"crawl":                     {"spider", "spidering", "traverse", "sitewide", "wget", "mirror"},
	"sitemap website structure": {"subpages", "siteindex", "urllist", "robots"},
	"html":                      {"markup", "htm", "xhtml", "viewsource"},
	"branding":                  {"fonts", "font", "palette", "typography", "styleguide"},
	"capabilities providers":    {"connectors", "connector", "integrations", "plugins", "marketplace", "skills", "apis"},
	"finance filings":           {"edgar", "10k", "stock", "stocks", "earnings", "revenue", "financials", "ticker", "investors"},
	"real estate":               {"housing", "homes", "zillow", "realty", "rent", "rental", "apartments", "mortgage"},
	"government spending":       {"grants", "procurement", "federal", "taxpayer", "subsidy", "subsidies"},
	"retail prices pricing":     {"cost", "cheapest", "cheap", "shopping", "buy", "discount", "deals", "msrp", "ecommerce"},
	"jobs":                      {"hiring", "vacancy", "vacancies", "careers", "employment", "salary", "salaries", "recruiting", "postings"},
	"interact live browser":     {"automate", "automation", "headless", "login", "signin"},
	"parse document":            {"ocr", "ingest", "digitize", "pptx", "odt", "textract", "scanned"},
	"monitor":                   {"watch", "watching", "watcher", "watchdog", "surveil", "oversee", "changedetection", "track", "tracker", "whenever"},
	"recurring schedule":        {"cron", "crontab", "hourly", "weekly", "nightly", "periodically", "regularly", "daily"},
	"webhook":                   {"callback", "callbacks", "hook", "zapier", "ifttt"},
	"notifications":             {"alert", "alerting", "pager", "pagerduty", "sms", "notify"},
	"immediate":                 {"asap", "instantly", "ondemand"},
	"status":                    {"pending", "outcome", "polling"},
	"agent":                     {"autonomous", "autopilot", "delegate"},
	"papers scientific":         {"publication", "publications", "journal", "journals", "preprint", "preprints", "studies", "academic", "scholarly", "scholar", "thesis"},
	"biomedical clinical":       {"medical", "medicine", "disease", "drug", "drugs", "trial", "trials", "cancer", "gene", "genes", "protein", "covid", "vaccine", "diabetes", "virus", "patient"},
	"citation":                  {"bibliography", "footnote", "footnotes", "citedby", "influential"},
	"abstract abstracts":        {"synopsis", "tldr", "overview"},
	"authors author":            {"writer", "writers", "researcher", "researchers", "scientist", "byline", "wrote"},
	"related similar":           {"alike", "lookalike", "comparable", "akin", "resembling"},
	"developer programming":     {"coding", "coder", "dev", "devs", "software", "stackoverflow", "engineer", "engineering"},
	"credit credits":            {"quota", "allowance", "topup", "prepaid", "wallet", "remaining"},
	"billing":                   {"invoice", "invoices", "charges", "charged", "payment", "payments", "paying"},

	// Google Drive.
	"drive": {"gdrive", "gdocs", "googledocs", "gsheets", "gsuite", "onedrive", "dropbox", "slides", "presentation", "deck", "spreadsheet", "nda", "contract", "proposal", "powerpoint", "sharepoint", "icloud"},

	// GitHub and GitLab.
	"repositories":         {"starred", "opensource", "oss", "gh"},
	"create repository":    {"init", "initialize", "newrepo"},
	"commits":              {"sha", "shas", "hash", "changelog", "gitlog", "blame", "history"},
	"push commit":          {"checkin", "checkins", "sync", "gitpush"},
	"issue issues":         {"jira", "enhancement", "regression", "glitch", "incident", "triage", "backlog", "story", "stories", "epic", "epics"},
	"branch":               {"hotfix", "bugfix", "trunk", "master", "featurebranch", "checkout"},
	"update branch latest": {"rebase", "behind", "outdated", "stale", "refresh", "sync"},
	"merge":                {"rebase", "fastforward", "mergeable", "conflict", "conflicts"},
	"search code":          {"symbol", "symbols", "implementation", "definition", "sourcecode", "callers", "usages", "defined", "function"},
	"users":                {"username", "usernames", "maintainer", "maintainers", "contributor", "contributors", "someone", "somebody", "staff", "everyone", "team"},
	"files changed":        {"touched", "affected", "diffstat", "altered"},
	"status checks":        {"ci", "pipeline", "pipelines", "passing", "failing", "green", "jenkins", "travis"},
	"reviews review":       {"lgtm", "nit", "nits", "signoff"},
	"namespace":            {"ns", "tenant", "multitenant"},

	// Google Maps.
	"geocode coordinates":         {"latitude", "longitude", "lat", "lng", "lon", "gps", "latlng", "geolocate", "geolocation", "pinpoint"},
	"address":                     {"postcode", "zipcode", "postal", "city", "town", "suburb", "whereabouts", "avenue", "boulevard", "blvd", "parkway", "ave"},
	"places place":                {"poi", "pois", "landmark", "landmarks", "attraction", "attractions", "sights", "museum", "park"},
	"distance travel time":        {"eta", "howfar", "mileage", "meters", "metres", "away", "traffic", "journey", "trip"},
	"origins destinations matrix": {"waypoint", "waypoints", "pickup", "dropoff", "pairwise", "crosstab"},
	"elevation":                   {"sea", "level", "tall", "mountain", "mountains", "hill", "hills", "peak", "summit", "topography", "topographic", "high", "feet"},
	"directions":                  {"bike", "biking", "cycling", "bicycle", "bus", "train", "subway", "metro", "itinerary", "satnav"},
	"geographic earth":            {"geo", "geography", "world", "planet", "gis"},
	"maps":                        {"gmaps", "googlemaps", "osm", "openstreetmap", "mapbox", "cartography"},

	// Kubernetes.
	"cleanup":                          {"garbage", "gc", "leftover", "leftovers", "orphaned", "dangling", "clean", "reset"},
	"kubernetes":                       {"eks", "gke", "aks", "openshift", "minikube", "k3s", "microk8s", "orchestration"},
	"kubernetes resources":             {"configmap", "configmaps", "secret", "secrets", "ingress", "svc", "pvc", "pv", "deployments", "objects"},
	"deployment statefulset daemonset": {"replicaset", "replicasets", "cronjob", "cronjobs"},
	"describe":                         {"troubleshoot", "diagnose", "unhealthy", "crashloop", "crashloopbackoff", "oomkilled", "imagepullbackoff", "evicted", "structure", "columns", "events"},
	"apply manifest":                   {"kustomize", "declarative", "spec", "specs", "yml", "iac", "gitops", "deploy", "definition"},
	"logs":                             {"journalctl", "traceback", "stacktrace", "exception", "exceptions", "output", "tail"},
	"scale":                            {"autoscale", "autoscaler", "replica", "replicas", "instances", "horizontal", "upsize", "downsize", "capacity", "hpa", "shrink", "increase", "decrease"},
	"rollout":                          {"rollback", "revert", "restart", "redeploy", "bounce", "roll", "canary", "undo", "resume", "kick", "recycle"},
	"kubectl context":                  {"kubectx", "kubeconfig", "prod", "production", "staging", "cluster"},
	"reconnect connections":            {"disconnected", "reestablish", "reauth", "relogin", "lost"},
	"alive responsive":                 {"heartbeat", "healthcheck", "reachable", "liveness", "connectivity", "pong", "uptime", "health"},
	"explain":                          {"meaning", "manpage", "whatis", "define", "planner", "queryplan", "collscan", "ixscan", "executionstats"},
	"helm chart":                       {"helmfile", "artifacthub", "bitnami", "tiller"},
	"install":                          {"deploy", "setup", "provision", "bootstrap"},
	"upgrade":                          {"newer", "bump", "modernize"},
	"uninstall":                        {"undeploy", "decommission", "teardown", "remove", "delete"},
	"cordon drain":                     {"maintenance", "evict", "eviction", "unschedulable", "schedulable", "isolate", "quarantine", "reboot", "rotation"},
	"node management":                  {"vm", "vms", "kubelet", "ec2"},
	"port forward":                     {"tunnel", "tunneling", "expose", "localhost", "proxy", "portforward", "socat"},
	"exec pod":                         {"ssh", "shell", "remote", "docker"},
	"container":                        {"docker", "containerized", "podman"},
	"api resources":                    {"kinds", "apigroup", "apigroups", "apiversions", "crd", "crds"},
	"generic":                          {"arbitrary", "passthrough", "adhoc", "custom"},
	"labels":                           {"selector", "selectors", "matchlabels", "tags", "category", "categories", "hashtag", "hashtags"},

	// Memory: the knowledge graph.
	"knowledge graph": {"kg", "ontology", "triples", "triple", "rdf", "neo4j", "graphdb", "memorize", "memorise", "recall", "recollect", "export", "backup", "memory", "remember"},
	"entities entity": {"concept", "concepts", "noun", "nouns"},
	"relations":       {"relationship", "relationships", "edge", "edges", "association", "associations", "linked", "unlink", "disconnect", "manages", "ties"},
	"observations":    {"memo", "jot", "tidbit", "trivia", "unlearn", "trait"},

	// Notion.
	"self bot":             {"myself", "whoami", "botuser", "identity", "integration"},
	"title":                {"named", "called", "caption", "heading"},
	"block blocks":         {"paragraph", "bullet", "bullets", "checklist", "callout", "widget", "heading", "todo", "checkbox"},
	"children":             {"child", "descendants", "subitems", "subblocks", "kids", "nested"},
	"notion page":          {"wiki", "wikis", "confluence", "evernote", "obsidian", "writeup", "notebook"},
	"properties property":  {"props", "prop", "frontmatter"},
	"data source database": {"tracker", "kanban", "board", "collection"},
	"templates template":   {"boilerplate", "blueprint", "blueprints", "preset", "presets", "scaffold", "skeleton", "starter"},

	// Playwright and Puppeteer: the browser.
	"browser":                {"chrome", "chromium", "firefox", "safari", "webkit", "headless", "webdriver"},
	"playwright puppeteer":   {"selenium", "cypress", "automation", "automate", "e2e", "scripted"},
	"resize window":          {"maximize", "minimize", "fullscreen", "breakpoint", "mobile", "iphone", "tablet", "ipad"},
	"console messages":       {"devtools", "js", "javascript", "errors", "warnings", "uncaught", "exception"},
	"dialog":                 {"messagebox", "lightbox", "overlay", "interstitial"},
	"dark color scheme":      {"darkmode", "nightmode", "theme", "themes", "lightmode", "appearance"},
	"emulate":                {"spoof", "mimic", "pretend", "mock"},
	"evaluate javascript":    {"eval", "js", "inject", "dom", "jquery", "queryselector", "scripting", "bookmarklet", "scroll"},
	"drag drop":              {"dnd", "draganddrop", "reorder", "rearrange", "sortable", "slider", "swipe"},
	"accessibility snapshot": {"a11y", "aria", "screenreader", "wcag", "dom", "domtree", "outline"},
	"fill form":              {"populate", "autofill", "prefill", "signup", "questionnaire", "submit"},
	"press key":              {"hotkey", "ctrl", "esc", "arrow", "backspace", "spacebar", "keypress", "keydown"},
	"type editable":          {"textbox", "textarea", "inputbox", "searchbox", "fillin"},
	"navigate":               {"redirect", "jump", "hop", "openurl", "nav"},
	"back previous":          {"backward", "backwards", "goback", "backbutton", "prior"},
	"network requests":       {"http", "https", "traffic", "har", "sniff", "sniffing", "graphql", "websocket"},
	"headers body":           {"cookie", "cookies", "useragent", "authorization", "bearer", "payload", "statuscode", "response"},
	"screenshot":             {"screencap", "printscreen", "snap", "snip", "thumbnail"},
	"click":                  {"tap", "button", "buttons", "doubleclick", "rightclick", "hit"},
	"hover":                  {"mouseover", "mouse", "tooltip", "tooltips", "mouseenter", "flyout", "cursor"},
	"select option dropdown": {"choose", "pick", "combobox", "combo", "listbox", "menu", "picklist", "choice"},
	"tabs":                   {"newtab", "browsertab", "multitab"},
	"wait":                   {"sleep", "await", "hold", "idle", "linger", "pause", "seconds", "delay"},
	"appear disappear":       {"visible", "invisible", "vanish", "vanishes", "spinner", "loader", "throbber"},

	// Postgres.
	"sql": {"postgres", "postgresql", "psql", "pg", "mysql", "sqlite", "rdbms", "join", "joins", "groupby", "average", "median", "percentile", "cohort", "churn", "retention", "dau", "mau", "signups", "count", "orders", "transactions", "revenue"},

	// Sequential thinking.
	"thinking thoughts": {"ponder", "deliberate", "contemplate", "cot", "stepwise", "strategize", "metacognition", "tradeoff", "pros", "cons", "weigh", "methodically", "systematically"},
	"problem solving":   {"tricky", "puzzle", "puzzles", "complicated", "decompose", "breakdown", "tackle", "logic", "riddle", "brainteaser"},
	"hypothesis":        {"theory", "conjecture", "assumption", "assumptions", "hunch", "premise"},
	"revise revision":   {"rethink", "revisit", "redo", "refine", "iterate", "flaw"},

	// Slack.
	"channels channel":     {"chatroom", "chatrooms", "conversation", "conversations", "discord", "groupchat"},
	"post message":         {"shout", "blast", "fyi", "remind", "reminder"},
	"thread replies reply": {"followup", "subthread", "respond"},
	"reaction emoji":       {"thumbs", "thumbsup", "upvote", "react", "heart", "smiley", "emoticon", "tada", "checkmark", "plusone", "ack", "acknowledge"},
	"history messages":     {"scrollback", "catchup", "missed", "unread", "transcript", "said"},
	"profile":              {"bio", "avatar", "timezone", "displayname", "pronouns"},

	// A second pass, by another author: each tool phrased five ways without its
	// own words, and a group added where no table led a phrasing to the tool
	// (words for keys above were added to their groups there).

	// Airtable: rows, sheets, columns, names and descriptions.
	"records":        {"sheet", "spreadsheet", "worksheet"},
	"containing":     {"mention", "keyword", "phrase", "includes"},
	"table tables":   {"worksheet"},
	"specific":       {"particular"},
	"multiple":       {"several", "batch", "bulk", "handful"},
	"simultaneously": {"together", "concurrently"},
	"edit":           {"typo"},
	"name":           {"retitle", "relabel"},
	"description":    {"explanation", "blurb"},
	"comment":        {"annotate"},

	// AWS knowledge base.
	"retrieval kb": {"intranet", "handbook", "policy", "faq", "semantic", "internal", "inhouse", "proprietary", "runbook", "runbooks", "playbook", "playbooks", "guidelines", "sop", "knowledgebase", "chunks", "vectordb", "compliance", "hr"},

	// Web and local search.
	"news recent": {"latest", "newest"},

	// Context7.
	"library id":    {"slug"},
	"documentation": {"guide", "official"},

	// Desktop Commander and the filesystem server.
	"config configuration": {"telemetry"},
	"results":              {"hits"},
	"more":                 {"next", "further"},
	"active running":       {"ongoing", "underway"},
	"input":                {"feed"},
	"terminal":             {"console", "shell"},
	"terminate":            {"end", "stop", "abort"},
	"calls":                {"invoked"},
	"onboarding":           {"tutorial", "guide", "orientation"},
	"media":                {"clip", "video"},
	"tree":                 {"outline", "layout"},

	// EverArt and the Everything reference server.
	"annotations":        {"audience", "hints"},
	"resource resources": {"asset"},
	"reference":          {"pointer"},
	"tiny":               {"small", "little", "miniature"},
	"simulates":          {"pretend"},

	// Firecrawl and Tavily.
	"website":           {"domain", "site"},
	"website structure": {"sitemap"},
	"providers":         {"dataset", "feeds"},
	"research":          {"dig", "dive"},
	"live":              {"remote"},
	"schedule":          {"cadence", "interval"},
	"historical":        {"history", "past"},
	"paper":             {"manuscript"},
	"passages":          {"excerpts", "quote"},
	"balance credit":    {"spend", "spent", "paid"},

	// GitHub and GitLab.
	"organization":    {"org", "organisation"},
	"update":          {"reopen"},
	"checks":          {"tests"},
	"review comments": {"inline"},
	"project":         {"repo", "codebase"},
	"issue":           {"feature", "crash"},

	// Google Maps.
	"place":       {"hotel", "motel", "gas", "petrol", "cafe", "hours", "phone", "bakery", "yelp", "tripadvisor"},
	"travel time": {"commute", "duration"},

	// Kubernetes.
	"delete":    {"nuke"},
	"reconnect": {"refresh", "renew", "reset"},

	// Memory: the knowledge graph.
	"entire": {"whole"},

	// Notion.
	"properties": {"tags"},
	"property":   {"rollup", "picklist", "enum", "enumeration"},

	// Playwright and Puppeteer.
	"close":         {"quit"},
	"handle dialog": {"accept", "dismiss"},
	"emulate media": {"stylesheet", "prefers", "motion", "simulate"},
	"upload":        {"attach"},
	"drop":          {"dropzone"},
	"form":          {"registration", "checkout"},
	"press":         {"hit"},
	"fill editable": {"enter", "input", "password"},
	"fill":          {"form", "textbox"},
	"url urls":      {"link", "homepage"},
	"disappear":     {"gone"},
	"select":        {"dropdown"},

	// Slack.
	"replies reply": {"responses"},
	"thread":        {"conversation"},
	"slack":         {"chat"},

	// A third pass, by a third author: ten task situations a server, written
	// before reading its tools' descriptions (words for keys above were added
	// to their groups there).
	"delete records":    {"dedupe", "dedup", "deduplicate"},
	"search":            {"comb", "scour", "sift", "rummage"},
	"art style":         {"watercolor", "pixel", "isometric", "lowpoly", "impressionist", "surreal", "painterly"},
	"verify hypothesis": {"sanity", "doublecheck", "crosscheck"},
	"depth":             {"deep", "levels"},

	// A fourth pass, for the six servers the evaluation recorded later (Sentry,
	// MongoDB, git, Todoist, HubSpot, Linear), by the three passes' methods (words
	// for keys above were added to their groups there).

	// Sentry: error monitoring, issues and events, releases, replays,
	// profiles, DSN client keys, teams, Seer's root cause analysis.
	"sentry":                 {"crash", "bugsnag", "rollbar", "crashlytics", "raygun", "honeybadger", "airbrake", "apm"},
	"error events":           {"exception", "exceptions", "stacktrace", "stacktraces", "traceback", "tracebacks", "panic", "segfault", "unhandled", "thrown", "typeerror", "referenceerror", "npe", "nullpointer"},
	"event events":           {"occurrence", "occurrences"},
	"grouped issues":         {"fingerprint", "fingerprints"},
	"replay replays":         {"recording", "recordings", "playback", "rewatch", "screencast", "rrweb", "clickstream", "logrocket", "fullstory", "hotjar"},
	"release releases":       {"shipped", "semver"},
	"distribution":           {"breakdown", "histogram", "segmentation", "proportion"},
	"event attachment":       {"minidump", "minidumps", "coredump", "crashdump", "heapdump", "dmp"},
	"ignore":                 {"mute", "muted", "silence", "snooze", "suppress"},
	"noise":                  {"noisy", "spammy"},
	"spans transactions":     {"latency", "slowness", "throughput", "p95", "p99", "apdex", "ttfb", "endpoint", "endpoints"},
	"trace traces":           {"distributed", "opentelemetry", "otel", "jaeger", "zipkin"},
	"team teams":             {"squads", "crew", "crews", "department", "departments"},
	"project service":        {"microservice", "microservices"},
	"dsn":                    {"client", "clientkey", "ingest", "ingestion", "publickey", "sdkkey"},
	"root cause":             {"rca", "culprit", "postmortem", "autofix"},
	"scrubbing":              {"pii", "redact", "redaction", "gdpr", "anonymize", "sanitize"},
	"source maps":            {"sourcemap", "sourcemaps", "minified", "symbolicate", "symbolication", "dsym", "proguard"},
	"setup sdk":              {"quickstart"},
	"flamegraph hotspot":     {"cpu", "slow", "bottleneck", "bottlenecks", "callstack", "callgraph", "flame", "perf", "pprof", "hotpath"},
	"production environment": {"prod"},
	"authenticated":          {"loggedin", "signedin", "credentials", "auth"},

	// MongoDB: collections, documents, indexes, aggregation, explain plans,
	// connections, Atlas local deployments, the knowledge base.
	"mongodb collection": {"mongo", "mongod", "mongosh", "nosql", "bson", "documentdb", "cosmosdb"},
	"index indexes":      {"secondary", "compound", "btree", "ttl", "speedup", "speed"},
	"schema":             {"infer", "fields"},
	"connect connection": {"connectionstring", "connstring", "uri", "srv"},
	"disconnect":         {"detach", "hangup", "logout", "signout"},
	"count":              {"tally", "quantity"},
	"many":               {"bulk"},
	"export ejson":       {"dump", "mongoexport", "mongodump", "backup", "extjson"},
	"insert":             {"seed", "seeding", "import", "mongoimport", "bulkload"},
	"databases":          {"dbs"},
	"update updates":     {"increment", "decrement", "upsert"},
	"aggregation":        {"pipeline", "mapreduce", "facet", "unwind"},
	"atlas local":        {"localhost", "ephemeral", "throwaway", "devcluster", "testcontainers"},
	"expert":             {"advice", "bestpractices", "practices", "tips"},
	"atlas deployment":   {"cluster", "clusters"},

	// git: staging, status, rebase, stash, tags, remotes, worktrees, blame,
	// reset, reflog, cherry-pick, clean, the working directory, wrap-up.
	"git":                {"vcs", "scm", "sourcecontrol"},
	"unstaged untracked": {"dirty", "uncommitted", "pristine"},
	"rebase reapplies":   {"replay", "linearize", "fixup", "fixups", "autosquash", "squash"},
	"stash stashes":      {"shelve", "shelved", "shelf", "wip", "stow"},
	"tag releases":       {"semver", "versioned", "marker"},
	"remote remotes":     {"origin", "upstream"},
	"worktree worktrees": {"checkouts", "sidebyside"},
	"blame authorship":   {"author", "authors", "wrote", "annotate", "responsible", "whodunit"},
	"reset discard":      {"undo", "uncommit", "unstage"},
	"reflog lost":        {"orphaned", "dangling", "resurrect", "undelete", "unreachable", "accidental", "accidentally"},
	"cherry pick":        {"backport", "uplift", "transplant"},
	"clean untracked":    {"stray", "artifacts", "gitignored", "junk"},
	"working directory":  {"cwd", "pwd", "chdir", "cd"},
	"commit":             {"checkpoint", "savepoint"},
	"diff differences":   {"compare", "comparison", "contrast"},
	"signed signatures":  {"gpg", "pgp"},
	"restore":            {"revert"},
	"changelog":          {"releasenotes", "whatsnew"},
	"wrap checklist":     {"finalize", "finalise", "handoff", "closeout", "finishing"},

	// Todoist: tasks, completion, projects, sections, labels, filters,
	// reminders, comments, productivity and project health.
	"tasks":              {"todo", "todos", "dos", "chores", "errand", "errands", "checklist", "actionitem", "gtd", "inbox"},
	"complete":           {"tick", "ticked", "done", "accomplish", "finished", "checkoff"},
	"uncomplete reopen":  {"untick", "uncheck", "unchecked", "undone"},
	"reschedule":         {"postpone", "defer", "snooze", "procrastinate"},
	"date today":         {"agenda", "tomorrow", "upcoming", "calendar", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekend"},
	"section sections":   {"heading", "headings", "lane", "lanes", "swimlane", "swimlanes", "subheading", "divider"},
	"reminder reminders": {"alarm", "alarms", "nudge", "nudges", "alert", "alerts", "buzz", "notification"},
	"filters saved":      {"smart", "smartlist", "perspective", "perspectives", "savedsearch"},
	"archive unarchive":  {"mothball", "retire"},
	"activity audit":     {"timeline", "eventlog", "changefeed"},
	"productivity karma": {"achievements", "gamification", "habit", "habits"},
	"completion trends":  {"velocity", "throughput", "burndown", "burnup"},
	"assessment":         {"evaluation", "scorecard"},
	"insights workspace": {"portfolio"},
	"reorder":            {"rearrange", "reshuffle", "reposition"},
	"parent":             {"nest", "subproject", "subprojects"},
	"assignments assign": {"delegation", "allocate"},
	"tasks parent":       {"subtask", "subtasks"},
	"priority":           {"p1", "p2", "p3", "p4", "importance", "urgency", "urgent"},
	"dates":              {"deadline", "deadlines", "duedate"},
	"color":              {"recolor", "recolour"},

	// HubSpot: the CRM's objects (contacts, deals, leads), engagements,
	// associations, properties, workflows, links.
	"hubspot":                  {"crm", "salesforce", "pipedrive", "zoho", "contact", "contacts", "deal", "deals", "lead", "leads", "prospect", "prospects", "pipeline", "opportunity", "opportunities", "lifecycle", "lifecyclestage"},
	"engagement engagements":   {"touchpoint", "touchpoints", "outreach", "correspondence", "meeting", "meetings", "interaction", "interactions"},
	"associations association": {"relates", "tied"},
	"property properties":      {"field", "fields"},
	"schemas custom":           {"bespoke", "customobject"},
	"workflow workflows":       {"automation", "automations", "sequence", "sequences", "nurture", "drip", "autoresponder"},
	"link links":               {"permalink", "deeplink", "clickable"},
	"permissions scopes":       {"oauth", "privileges", "entitlements"},
	"owner":                    {"salesperson", "salesrep"},
	"feedback dissatisfaction": {"frustrating", "frustrated", "frustration", "unhappy", "annoyed", "disappointed"},

	// Linear: issues, the workload assigned to a user.
	"linear":            {"jira", "youtrack", "clubhouse", "sprint", "sprints"},
	"workload assigned": {"plate"},
	"estimate":          {"storypoints"},
}
