// The console's one script: it follows /console/events and re-renders the
// tables from each snapshot, with textContent only (the data is hostile:
// code output, session names, tool arguments), and filters the audit
// table as the operator types.
"use strict";

(function () {
  var body = document.body;
  var csrf = body.getAttribute("data-csrf") || "";

  function el(tag, text, attrs) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (attrs) for (var k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }
  function row(cells, attrs) {
    var tr = el("tr", null, attrs);
    cells.forEach(function (c) {
      var td = el("td");
      if (c instanceof Node) td.appendChild(c); else td.textContent = c === undefined || c === null ? "" : String(c);
      tr.appendChild(td);
    });
    return tr;
  }
  function fill(id, rows) {
    var tb = document.getElementById(id);
    while (tb.firstChild) tb.removeChild(tb.firstChild);
    rows.forEach(function (r) { tb.appendChild(r); });
  }
  function dur(s) {
    s = Math.floor(s || 0);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60) + "s";
    return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m" + (s % 60) + "s";
  }
  function mib(n) { return n > 0 ? (n / 1048576).toFixed(1) + " MiB" : ""; }
  function setText(id, t) { document.getElementById(id).textContent = t === undefined || t === null ? "" : String(t); }

  function answerForm(q) {
    var f = el("form", null, { method: "post", action: "/console/answer" });
    f.appendChild(el("input", null, { type: "hidden", name: "csrf", value: csrf }));
    f.appendChild(el("input", null, { type: "hidden", name: "question", value: q.id }));
    f.appendChild(el("button", "Approve", { type: "submit", name: "answer", value: "approve", "class": "approve" }));
    f.appendChild(document.createTextNode(" "));
    f.appendChild(el("button", "Decline", { type: "submit", name: "answer", value: "decline", "class": "decline" }));
    return f;
  }

  function render(s) {
    setText("status", s.status);
    document.getElementById("status").setAttribute("data-status", s.status);
    setText("status-error", s.error);
    setText("engine", s.engine);
    var pool = document.getElementById("pool");
    pool.textContent = s.pool.ready + "/" + s.pool.size;
    pool.setAttribute("data-ready", s.pool.ready);
    pool.setAttribute("data-size", s.pool.size);
    var sleeping = document.getElementById("sleeping");
    sleeping.textContent = s.pool.sleeping + (s.pool.sleeping_bytes ? " (" + mib(s.pool.sleeping_bytes) + ")" : "");
    sleeping.setAttribute("data-bytes", s.pool.sleeping_bytes);
    fill("engines-body", (s.engines || []).map(function (e) {
      return row([e.name, e.up, e.sandboxes, e.error], { "data-engine": e.name });
    }));
    fill("questions-body", (s.questions || []).map(function (q) {
      var args = el("div");
      args.appendChild(el("pre", q.arguments, { "class": "arguments" }));
      args.appendChild(el("a", "whole arguments (" + q.arguments_bytes + " bytes)", { "class": "whole-arguments",
        href: "/console/arguments?question=" + encodeURIComponent(q.id), target: "_blank", rel: "noopener noreferrer" }));
      return row([q.session, q.server, q.tool, q.message, args, q.line || "", dur(q.waiting_seconds),
        csrf ? answerForm(q) : ""], { "data-question": q.id });
    }));
    fill("sessions-body", (s.sessions || []).map(function (x) {
      return row([x.name, x.mcp_session, x.engine, x.container, dur(x.age_seconds), x.calls, x.busy, mib(x.memory_bytes)], { "data-session": x.name });
    }));
    fill("calls-body", (s.calls || []).map(function (c) {
      var pre = el("pre", (c.output || []).join("\n"), { "class": "output" });
      return row([c.id, c.session, dur(c.elapsed_seconds), el("code", c.code), pre], { "data-call": c.id, "data-session": c.session });
    }));
    var st = document.getElementById("audit-state");
    st.setAttribute("data-on", s.audit_on);
    st.textContent = s.audit_on ? "The newest first; egress records included." : "No audit records: MCP_BRIDGE_AUDIT_LOG is not set.";
    fill("audit-body", (s.audit || []).map(function (a) {
      return row([a.time, a.event, a.session, el("code", a.detail)], { "data-event": a.event });
    }));
    filter();
    body.setAttribute("data-updates", String(Number(body.getAttribute("data-updates")) + 1));
  }

  function filter() {
    var q = document.getElementById("audit-filter").value.toLowerCase();
    var rows = document.getElementById("audit-body").rows;
    for (var i = 0; i < rows.length; i++) {
      var hide = q !== "" && rows[i].textContent.toLowerCase().indexOf(q) < 0;
      rows[i].classList.toggle("hidden", hide);
    }
  }
  document.getElementById("audit-filter").addEventListener("input", filter);

  function state(s) { body.setAttribute("data-stream", s); setText("stream-state", s); }
  var es = new EventSource("/console/events");
  es.addEventListener("open", function () { state("live"); });
  es.addEventListener("error", function () { state("reconnecting"); });
  es.addEventListener("snapshot", function (ev) { render(JSON.parse(ev.data)); });
  es.addEventListener("signedout", function () { es.close(); state("signed out"); window.location.assign("/console/signin"); });
})();
