// The flowbroker console: reads the admin API (same origin, the login cookie or no token) and
// draws the page the path names: /ui/ (workflows and instances), /ui/workflows/{id},
// /ui/instances/{id}. No framework and nothing from a CDN: it works offline.
"use strict";

const FINAL = ["COMPLETED", "FAILED", "CANCELLED", "TERMINATED"];
const STATUSES = ["RUNNING", "WAITING", "COMPLETED", "FAILED", "CANCELLED", "TERMINATED"];
const main = document.getElementById("main");
let refresh = null;

// el("a", {href: "/x"}, "text", child...): an element; strings become text (never HTML).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path, options) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  if (r.status === 401) {
    location.href = "/ui/login";
    throw new Error("log in first");
  }
  const text = await r.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = text; }
  if (!r.ok) throw new Error((body && body.error) || `${r.status} ${r.statusText}`);
  return body;
}

async function svg(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) throw new Error(`graph: ${r.status}`);
  const holder = el("div", { class: "graph" });
  holder.innerHTML = await r.text(); // our own SVG, drawn by the broker from the definition
  return holder;
}

const status = (s) => el("span", { class: `status ${s || ""}`, "data-status": s || "" }, s || "");
const pretty = (v) => el("pre", { class: "mono" }, JSON.stringify(v, null, 2));
const instanceLink = (id) => el("a", { href: `/ui/instances/${id}`, class: "mono" }, id);
const workflowLink = (id) => el("a", { href: `/ui/workflows/${encodeURIComponent(id)}` }, id);
const when = (t) => (t ? new Date(t).toLocaleString() : "");

function show(...nodes) {
  main.replaceChildren(...nodes);
}

function failed(e) {
  show(el("p", { class: "error" }, String(e.message || e)));
}

// ---- /ui/ : workflows, invalid files, instances ----

function languageName(l) {
  if (l === "asl") return "Amazon States Language";
  if (l === "durable-function") return "Lambda durable function";
  return "Serverless Workflow";
}

async function home() {
  const params = new URLSearchParams(location.search);
  const [wf] = await Promise.all([api("/v1/workflows")]);
  const workflows = el("section", { id: "workflows" },
    el("h2", {}, "Deployed workflows"),
    el("table", {},
      el("thead", {}, el("tr", {}, ["Workflow", "Name", "Language", "Version", "File", "Deployed", "Warnings"].map((h) => el("th", {}, h)))),
      el("tbody", {}, (wf.workflows || []).map((w) => el("tr", {},
        el("td", {}, workflowLink(w.id)),
        el("td", {}, w.name),
        el("td", { "data-language": w.language }, languageName(w.language)),
        el("td", { class: "mono" }, w.workflowVersion ? `${w.workflowVersion} (${w.version.slice(0, 12)})` : w.version.slice(0, 12)),
        el("td", { class: "mono" }, w.file),
        el("td", {}, when(w.deployed)),
        el("td", {}, (w.warnings || []).length ? el("span", { title: w.warnings.join("\n") }, String(w.warnings.length)) : ""))))));
  const invalid = (wf.invalid || []).length
    ? el("section", { id: "invalid" },
        el("h2", { class: "error" }, "Invalid workflow files (the last good version keeps running)"),
        (wf.invalid || []).map((f) => el("div", {},
          el("div", { class: "mono" }, f.file),
          el("ul", {}, (f.errors || []).map((e) => el("li", {},
            el("span", { class: "mono" }, e.path || "$"), ": ", e.message))))))
    : null;

  const filters = el("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    const w = ev.target.workflow.value, s = ev.target.status.value;
    if (w) q.set("workflow", w);
    if (s) q.set("status", s);
    history.pushState(null, "", `/ui/?${q}`);
    route();
  } },
    el("label", {}, "Workflow", el("select", { name: "workflow" },
      el("option", { value: "" }, "all"),
      (wf.workflows || []).map((w) => el("option", { value: w.id, selected: params.get("workflow") === w.id }, w.id)))),
    el("label", {}, "Status", el("select", { name: "status" },
      el("option", { value: "" }, "all"),
      STATUSES.map((s) => el("option", { value: s, selected: params.get("status") === s }, s)))),
    el("button", { type: "submit" }, "Filter"));

  const q = new URLSearchParams({ limit: "50" });
  if (params.get("workflow")) q.set("workflowId", params.get("workflow"));
  if (params.get("status")) q.set("status", params.get("status"));
  if (params.get("after")) q.set("after", params.get("after"));
  const list = await api(`/v1/instances?${q}`);
  const rows = (list.instances || []).map((i) => el("tr", { "data-instance": i.id },
    el("td", {}, instanceLink(i.id)),
    el("td", {}, workflowLink(i.workflowId)),
    el("td", {}, status(i.status)),
    el("td", {}, i.state || ""),
    el("td", {}, when(i.updated))));
  const pager = el("div", { class: "pager" },
    params.get("after") ? el("button", { onclick: () => { history.back(); } }, "← Previous") : null,
    list.next ? el("button", { onclick: () => {
      const p = new URLSearchParams(location.search);
      p.set("after", list.next);
      history.pushState(null, "", `/ui/?${p}`);
      route();
    } }, "Next →") : null);
  const missing = (list.statePartitions && list.statePartitions.unavailable || []);
  const instances = el("section", { id: "instances" },
    el("h2", {}, "Instances"),
    filters,
    missing.length ? el("p", { class: "error" }, `State partitions ${missing.join(", ")} had no reachable owner: their instances are missing.`) : null,
    rows.length
      ? el("table", {},
          el("thead", {}, el("tr", {}, ["Instance", "Workflow", "Status", "State", "Updated"].map((h) => el("th", {}, h)))),
          el("tbody", {}, rows))
      : el("p", { class: "muted" }, "No instances."),
    pager);
  show(el("h1", {}, "Workflows & instances"), workflows, invalid, instances);
}

// ---- /ui/workflows/{id} ----

async function workflowPage(id) {
  const w = await api(`/v1/workflows/${encodeURIComponent(id)}`);
  const graph = await svg(`/v1/workflows/${encodeURIComponent(id)}/graph`).catch((e) => el("p", { class: "error" }, e.message));
  show(
    el("h1", {}, w.name, " ", el("span", { class: "muted mono" }, w.id)),
    el("section", {},
      el("dl", { class: "facts" },
        el("dt", {}, "Language"), el("dd", { id: "language" }, languageName(w.language)),
        el("dt", {}, "Version"), el("dd", { class: "mono" }, w.workflowVersion ? `${w.workflowVersion} (${w.version})` : w.version),
        el("dt", {}, "File"), el("dd", { class: "mono" }, w.file),
        el("dt", {}, "Deployed"), el("dd", {}, when(w.deployed)),
        el("dt", {}, "Instances"), el("dd", {}, el("a", { href: `/ui/?workflow=${encodeURIComponent(w.id)}` }, "list them"))),
      (w.warnings || []).length ? el("ul", {}, w.warnings.map((x) => el("li", { class: "muted" }, x))) : null),
    el("div", { class: "grid" },
      el("section", { id: "graph" }, el("h2", {}, "Graph"), graph),
      el("section", { id: "definition" }, el("h2", {}, "Definition"), el("pre", { class: "mono" }, w.source))));
}

// ---- /ui/instances/{id} ----

function describeInput(input) {
  switch (input.kind) {
    case "start": {
      const by = (input.events || []).map((e) => `${e.type} (${e.id})`);
      return by.length ? `started by ${by.join(", ")}` : "started";
    }
    case "event": return `event ${input.event.type} (${input.event.id})`;
    case "actionResult": return `function result ${input.key}`;
    case "actionFailed": return `function failed ${input.key}: ${input.error && input.error.message}`;
    case "timerFired": return `timer ${input.id}`;
    case "childCompleted": return `child completed ${input.id}`;
    case "childFailed": return `child failed ${input.id}`;
    case "cancel": return "cancel requested";
    case "checkpoint": {
      const n = Array.isArray(input.updates) ? input.updates.length : "?";
      return `checkpoint (${n} update${n === 1 ? "" : "s"})`;
    }
    default: return input.kind;
  }
}

function describeAction(a) {
  switch (a.kind) {
    case "invoke": return `invoke ${a.function}`;
    case "produce": return `produce ${a.event.type}`;
    case "armTimer": return `timer until ${when(a.due)}`;
    case "cancelTimer": return "cancel timer";
    case "startChild": return `start child ${a.workflowId}`;
    case "cancelChild": return "cancel child";
    case "complete": return "complete";
    case "terminate": return "terminate";
    case "fail": return `fail: ${a.error && a.error.name}`;
    default: return a.kind;
  }
}

// a durable execution's operations as a timeline: nested by ParentId, with what each holds
function operations(ops) {
  const depth = {};
  for (const o of ops) depth[o.Id] = o.ParentId && depth[o.ParentId] !== undefined ? depth[o.ParentId] + 1 : 0;
  const t0 = ops.length ? ops[0].StartTimestamp : 0;
  const secs = (t) => (t === undefined || t === null ? "" : `+${(t - t0).toFixed(3)} s`);
  const detail = (o) => {
    const d = o.StepDetails || o.CallbackDetails || o.ContextDetails || o.ChainedInvokeDetails || {};
    const bits = [];
    if (o.StepDetails && o.StepDetails.Attempt) bits.push(`attempt ${o.StepDetails.Attempt}`);
    if (o.WaitDetails && o.WaitDetails.ScheduledEndTimestamp) bits.push(`until ${secs(o.WaitDetails.ScheduledEndTimestamp)}`);
    if (o.CallbackDetails && o.CallbackDetails.CallbackId) bits.push(`callback id ${o.CallbackDetails.CallbackId}`);
    if (d.Result !== undefined && d.Result !== null) bits.push(`result ${String(d.Result).slice(0, 120)}`);
    if (d.Error) bits.push(`error ${d.Error.ErrorType || ""}: ${d.Error.ErrorMessage || ""}`);
    return bits.join(" · ");
  };
  return el("section", { id: "operations" },
    el("h2", {}, `Operations (${ops.length})`),
    el("table", {},
      el("thead", {}, el("tr", {}, ["Operation", "Type", "Status", "Started", "Ended", "Details"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ops.map((o) => el("tr", { "data-op": o.Id, "data-op-status": o.Status },
        el("td", { style: `padding-left:${0.6 + 1.2 * depth[o.Id]}rem` }, o.Name || el("span", { class: "muted mono" }, o.Id)),
        el("td", {}, o.SubType && o.SubType !== o.Type ? `${o.Type} (${o.SubType})` : o.Type),
        el("td", {}, status(o.Status)),
        el("td", { class: "mono" }, secs(o.StartTimestamp)),
        el("td", { class: "mono" }, secs(o.EndTimestamp)),
        el("td", { class: "mono" }, detail(o)))))));
}

async function instancePage(id) {
  const i = await api(`/v1/instances/${id}`);
  const graph = await svg(`/v1/instances/${id}/graph`).catch((e) => el("p", { class: "error" }, e.message));
  const final = FINAL.includes(i.status);
  const history = i.history || [];
  const visited = [...new Set(history.flatMap((h) => h.entered || []))];
  const cancel = final ? null : el("button", { class: "danger", id: "cancel", onclick: async (ev) => {
    if (!confirm(`Cancel instance ${id}?`)) return;
    ev.target.disabled = true;
    try {
      await api(`/v1/instances/${id}/cancel`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    } catch (e) { alert(e.message); }
    route();
  } }, "Cancel instance");
  show(
    el("h1", {}, "Instance ", el("span", { class: "mono", id: "instance-id" }, i.id), " ", status(i.status)),
    el("section", { id: "summary" },
      el("dl", { class: "facts" },
        el("dt", {}, "Workflow"), el("dd", {}, workflowLink(i.workflowId), el("span", { class: "muted mono" }, ` version ${i.version}`)),
        el("dt", {}, "Current state"), el("dd", { id: "current-state" }, i.state || ""),
        el("dt", {}, "Visited"), el("dd", { id: "visited" }, visited.join(" → ")),
        el("dt", {}, "Created"), el("dd", {}, when(i.created)),
        el("dt", {}, "Updated"), el("dd", {}, when(i.updated)),
        i.parentId ? [el("dt", {}, "Parent"), el("dd", {}, instanceLink(i.parentId))] : null,
        Object.keys(i.correlation || {}).length ? [el("dt", {}, "Correlation"), el("dd", { class: "mono" }, JSON.stringify(i.correlation))] : null),
      cancel ? el("p", {}, cancel) : null,
      final ? null : el("p", { class: "muted" }, "Refreshing every 2 s while the instance runs.")),
    el("div", { class: "grid" },
      el("section", { id: "graph" }, el("h2", {}, "Graph"),
        el("p", { class: "legend" }, el("span", { style: "background:#cfe3ff" }, "visited"), el("span", { style: "background:#ffd666" }, "current")),
        graph),
      el("section", { id: "data" },
        el("h2", {}, "Data"), pretty(i.data),
        i.output !== null && i.output !== undefined ? [el("h2", {}, "Output"), pretty(i.output)] : null,
        i.error ? [el("h2", { class: "error" }, "Error"), pretty(i.error)] : null)),
    Array.isArray(i.operations) ? operations(i.operations) : null,
    el("section", { id: "history" },
      el("h2", {}, `History (${history.length} inputs)`),
      el("ol", { class: "timeline" }, history.map((h) => el("li", { "data-seq": h.seq },
        el("div", {}, el("span", { class: "muted" }, `#${h.seq} ${when(h.at)} `), el("span", { class: "what" }, describeInput(h.input))),
        (h.entered || []).length ? el("div", {}, "entered ", h.entered.join(" → ")) : null,
        (h.actions || []).length ? el("div", { class: "decisions" }, "decided: ", h.actions.map(describeAction).join(", ")) : null,
        el("div", {}, "then ", h.state || "", " ", status(h.status)))))));
  if (!final) refresh = setTimeout(route, 2000);
}

// ---- routing ----

async function route() {
  clearTimeout(refresh);
  const path = decodeURIComponent(location.pathname);
  try {
    if (path.startsWith("/ui/instances/")) await instancePage(path.slice("/ui/instances/".length));
    else if (path.startsWith("/ui/workflows/")) await workflowPage(path.slice("/ui/workflows/".length));
    else await home();
    document.body.dataset.ready = "true";
  } catch (e) {
    failed(e);
    document.body.dataset.ready = "error";
  }
}

window.addEventListener("popstate", route);
route();
