// sparklink console: reads the worker's REST API and /metrics every few seconds and acts through the same API.
// Plain script, no dependency, nothing fetched from elsewhere; the page's Content-Security-Policy allows
// scripts, styles and requests from this origin only. Elements are updated in place, so a keyboard
// user's focus survives each refresh.
"use strict";

const POLL_MS = 5000;
const KEEP_MS = 10 * 60 * 1000;
const SVG = "http://www.w3.org/2000/svg";

const view = {
  selected: null,        // the chosen connector's name
  connectors: {},        // name -> {status, info}
  history: {},           // name -> [{t, rate, lag}]
  totals: {},            // name -> {t, total} at the previous scrape, for the rate
  queries: {},           // name -> task id -> labels of sparklink_task_query_info
  lags: {},              // name -> the most any of its tasks lags
  busy: false,
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- the REST API
async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = text;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (ignored) {
    // not JSON (/metrics, or a proxy's page): keep the text
  }
  if (!response.ok) {
    const reason = data && data.message ? data.message : `${response.status} ${response.statusText}`;
    const error = new Error(response.status === 401 ? `${reason} Sign in again (reload this page).` : reason);
    error.status = response.status;
    throw error;
  }
  return data;
}

const connectorPath = (name) => `/connectors/${encodeURIComponent(name)}`;

function say(text, isError) {
  const box = $("message");
  box.textContent = text;
  box.className = isError ? "error" : "ok";
}

// ---------------------------------------------------------------- /metrics
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!match) continue;
    const labels = {};
    const pairs = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let pair;
    while ((pair = pairs.exec(match[2] || "")) !== null) {
      labels[pair[1]] = pair[2].replace(/\\n/g, "\n").replace(/\\"/g, '"').replace(/\\\\/g, "\\");
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

// A connector's name as it stands in Connect's metric labels (quoted as Kafka's JMX reporter quotes it).
function jmxName(name) {
  if (/^[\w\-%. \t]*$/.test(name)) return name;
  return `"${name.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\*/g, "\\*").replace(/\?/g, "\\?").replace(/\n/g, "\\n")}"`;
}

function absorbMetrics(samples, now) {
  const byLabel = {};
  for (const name of Object.keys(view.connectors)) byLabel[jmxName(name)] = name;
  const totals = {};
  const lags = {};
  const queries = {};
  for (const s of samples) {
    if (s.name === "sparklink_task_query_info") {
      (queries[s.labels.connector] = queries[s.labels.connector] || {})[s.labels.task] = s.labels;
      continue;
    }
    const name = byLabel[s.labels.connector];
    if (name === undefined || !Number.isFinite(s.value)) continue;
    if (s.name === "kafka_connect_source_task_source_record_write_total" || s.name === "kafka_connect_sink_task_sink_record_read_total") {
      totals[name] = (totals[name] || 0) + s.value;
    } else if (s.name === "kafka_connect_sink_task_sink_record_lag_max") {
      lags[name] = Math.max(lags[name] || 0, s.value);
    }
  }
  view.queries = queries;
  view.lags = lags;
  for (const name of Object.keys(view.connectors)) {
    const total = totals[name];
    const before = view.totals[name];
    let rate = null;
    if (total !== undefined && before && total >= before.total && now > before.t) {
      rate = ((total - before.total) * 1000) / (now - before.t);
    }
    if (total !== undefined) view.totals[name] = { t: now, total };
    const points = (view.history[name] = view.history[name] || []);
    points.push({ t: now, rate, lag: lags[name] === undefined ? null : lags[name] });
    while (points.length && points[0].t < now - KEEP_MS) points.shift();
  }
}

// ---------------------------------------------------------------- refresh
async function refresh() {
  if (view.busy) return;
  view.busy = true;
  try {
    const [root, listed, metrics] = await Promise.all([
      api("GET", "/"),
      api("GET", "/connectors?expand=status&expand=info"),
      api("GET", "/metrics"),
    ]);
    $("worker").textContent = `Worker ${root.version} on Kafka cluster ${root.kafka_cluster_id || "(unknown)"}`;
    view.connectors = listed || {};
    absorbMetrics(parseMetrics(metrics || ""), Date.now());
    renderList();
    await renderDetails();
  } catch (error) {
    say(`Could not read the worker: ${error.message}`, true);
  } finally {
    view.busy = false;
  }
}

function stateBadge(element, state) {
  element.textContent = state;
  element.className = `state state-${String(state).toLowerCase()}`;
}

function renderList() {
  const list = $("connectors");
  const names = Object.keys(view.connectors).sort();
  $("no-connectors").hidden = names.length > 0;
  const existing = new Map([...list.children].map((item) => [item.dataset.name, item]));
  for (const [name, item] of existing) if (!names.includes(name)) item.remove();
  names.forEach((name, index) => {
    let item = existing.get(name);
    if (!item) {
      item = document.createElement("li");
      item.dataset.name = name;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "pick";
      const label = document.createElement("span");
      label.className = "name";
      label.textContent = name;
      const badge = document.createElement("span");
      button.append(label, " ", badge);
      button.addEventListener("click", () => select(name));
      item.append(button);
    }
    if (list.children[index] !== item) list.insertBefore(item, list.children[index] || null);
    const entry = view.connectors[name];
    const status = entry.status || { connector: { state: "UNKNOWN" }, tasks: [] };
    const failed = status.tasks.filter((t) => t.state === "FAILED").length;
    const button = item.querySelector("button");
    stateBadge(button.querySelector("span:last-child"), failed ? `${status.connector.state}, ${failed} failed` : status.connector.state);
    if (failed) button.querySelector("span:last-child").className = "state state-failed";
    if (view.selected === name) button.setAttribute("aria-current", "true");
    else button.removeAttribute("aria-current");
  });
  if (view.selected && !names.includes(view.selected)) {
    view.selected = null;
    $("connector").hidden = true;
    $("placeholder").hidden = false;
  }
}

function select(name) {
  view.selected = name;
  renderList();
  renderDetails().then(() => $("details").focus());
}

async function renderDetails() {
  const name = view.selected;
  if (!name || !view.connectors[name]) return;
  const { status, info } = view.connectors[name];
  $("placeholder").hidden = true;
  $("connector").hidden = false;
  $("connector-name").textContent = name;
  stateBadge($("connector-state"), status.connector.state);
  $("connector-worker").textContent = status.connector.worker_id;
  $("connector-type").textContent = status.type;
  $("connector-class").textContent = (info && info.config && info.config["connector.class"]) || "";
  const trace = status.connector.trace || "";
  $("connector-trace-box").hidden = !trace;
  $("connector-trace").textContent = trace;
  const state = status.connector.state;
  $("pause").disabled = state === "PAUSED";
  $("resume").disabled = state === "RUNNING" && !status.tasks.some((t) => t.state === "PAUSED");
  $("stop").disabled = state === "STOPPED";
  $("reset-offsets").disabled = state !== "STOPPED";
  renderTasks(name, status.tasks);
  const points = view.history[name] || [];
  drawChart($("rate-chart"), points.map((p) => [p.t, p.rate]), $("rate-now"), "records/s");
  drawChart($("lag-chart"), points.map((p) => [p.t, p.lag]), $("lag-now"), "records behind");
  try {
    const [topics, offsets] = await Promise.all([
      api("GET", `${connectorPath(name)}/topics`),
      api("GET", `${connectorPath(name)}/offsets`),
    ]);
    if (view.selected !== name) return;
    renderTopics(((topics || {})[name] || {}).topics || []);
    renderOffsets((offsets || {}).offsets || []);
  } catch (error) {
    renderTopics([]);
    renderOffsets([]);
  }
}

function renderTasks(name, tasks) {
  const body = $("tasks").querySelector("tbody");
  const rows = new Map([...body.querySelectorAll("tr[data-task]")].map((row) => [row.dataset.task, row]));
  if (body.dataset.connector !== name) {
    body.textContent = "";
    rows.clear();
    body.dataset.connector = name;
  }
  const ids = tasks.map((t) => String(t.id));
  for (const [id, row] of rows) if (!ids.includes(id)) row.remove();
  for (const task of tasks) {
    const id = String(task.id);
    let row = rows.get(id);
    if (!row) {
      row = document.createElement("tr");
      row.dataset.task = id;
      row.innerHTML = "<th scope=\"row\"></th><td class=\"task-state\"><span></span></td><td></td><td class=\"query\"></td><td></td>";
      const restart = document.createElement("button");
      restart.type = "button";
      restart.textContent = `Restart task ${id}`;
      restart.addEventListener("click", () => act(`Restart of task ${id} of ${name}`, "POST", `${connectorPath(name)}/tasks/${id}/restart`));
      row.children[4].append(restart);
      row.children[0].textContent = id;
      body.append(row);
    }
    stateBadge(row.children[1].querySelector("span"), task.state);
    let details = row.children[1].querySelector("details");
    if (task.trace) {
      if (!details) {
        details = document.createElement("details");
        const summary = document.createElement("summary");
        summary.textContent = "Trace";
        details.append(summary, document.createElement("pre"));
        row.children[1].append(details);
      }
      details.querySelector("pre").textContent = task.trace;
    } else if (details) {
      details.remove();
    }
    row.children[2].textContent = task.worker_id;
    renderQuery(row.children[3], (view.queries[name] || {})[id]);
  }
}

function renderQuery(cell, query) {
  const key = query ? `${query.run_id}|${query.spark_ui || ""}` : "";
  if (cell.dataset.key === key) return;
  cell.dataset.key = key;
  cell.textContent = "";
  if (!query) {
    cell.textContent = "not running here";
    return;
  }
  if (query.spark_ui) {
    const link = document.createElement("a");
    link.href = `${query.spark_ui}/StreamingQuery/statistics/?id=${encodeURIComponent(query.run_id)}`;
    link.textContent = query.query_name;
    link.rel = "noopener noreferrer";
    cell.append(link);
  } else {
    const code = document.createElement("code");
    code.textContent = query.query_name;
    code.title = `query ${query.query_id}, run ${query.run_id} (the Spark UI is off: spark.ui.enabled=false)`;
    cell.append(code);
  }
  cell.append(` ${query.trigger}`);
}

function renderTopics(topics) {
  const list = $("topics");
  list.textContent = "";
  if (!topics.length) {
    const none = document.createElement("li");
    none.textContent = "none yet";
    list.append(none);
  }
  for (const topic of topics) {
    const item = document.createElement("li");
    item.textContent = topic;
    list.append(item);
  }
}

function renderOffsets(offsets) {
  const body = $("offsets").querySelector("tbody");
  body.textContent = "";
  for (const entry of offsets) {
    const row = document.createElement("tr");
    for (const part of [entry.partition, entry.offset]) {
      const cell = document.createElement("td");
      const code = document.createElement("code");
      code.textContent = JSON.stringify(part);
      cell.append(code);
      row.append(cell);
    }
    body.append(row);
  }
}

// ---------------------------------------------------------------- charts
function drawChart(svg, points, caption, unit) {
  const known = points.filter(([, v]) => v !== null && Number.isFinite(v));
  svg.textContent = "";
  const width = 320;
  const height = 120;
  const pad = 28;
  const now = Date.now();
  const top = Math.max(1, ...known.map(([, v]) => v));
  const x = (t) => pad + ((t - (now - KEEP_MS)) / KEEP_MS) * (width - pad - 4);
  const y = (v) => height - 16 - (v / top) * (height - 28);
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  add("line", { x1: pad, y1: height - 16, x2: width - 4, y2: height - 16, class: "axis" });
  add("line", { x1: pad, y1: 8, x2: pad, y2: height - 16, class: "axis" });
  add("text", { x: pad - 4, y: 14, class: "tick", "text-anchor": "end" }, formatNumber(top));
  add("text", { x: pad - 4, y: height - 16, class: "tick", "text-anchor": "end" }, "0");
  add("text", { x: pad, y: height - 2, class: "tick" }, "10 min ago");
  add("text", { x: width - 4, y: height - 2, class: "tick", "text-anchor": "end" }, "now");
  if (known.length) {
    add("polyline", { points: known.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "), class: "series" });
  }
  const last = known.length ? known[known.length - 1][1] : null;
  caption.textContent = last === null ? "No value yet." : `Now: ${formatNumber(last)} ${unit}.`;
}

function formatNumber(value) {
  return value >= 100 ? Math.round(value).toLocaleString("en") : value.toFixed(value >= 10 ? 1 : 2);
}

// ---------------------------------------------------------------- actions
async function act(what, method, path) {
  say(`${what}…`, false);
  try {
    await api(method, path);
    say(`${what}: accepted.`, false);
  } catch (error) {
    say(`${what} failed: ${error.message}`, true);
  }
  await refresh();
}

function wireActions() {
  const on = (id, handler) => $(id).addEventListener("click", () => view.selected && handler(view.selected));
  on("restart", (name) => {
    const query = `includeTasks=${$("include-tasks").checked}&onlyFailed=${$("only-failed").checked}`;
    act(`Restart of ${name}`, "POST", `${connectorPath(name)}/restart?${query}`);
  });
  on("pause", (name) => act(`Pause of ${name}`, "PUT", `${connectorPath(name)}/pause`));
  on("resume", (name) => act(`Resume of ${name}`, "PUT", `${connectorPath(name)}/resume`));
  on("stop", (name) => act(`Stop of ${name}`, "PUT", `${connectorPath(name)}/stop`));
  on("reset-offsets", (name) => {
    if (window.confirm(`Reset every offset of ${name}? It starts over from the beginning when resumed.`)) {
      act(`Offsets reset of ${name}`, "DELETE", `${connectorPath(name)}/offsets`);
    }
  });
  on("delete", (name) => {
    if (window.confirm(`Delete the connector ${name}? Its config and status go; its offsets stay.`)) {
      act(`Deletion of ${name}`, "DELETE", connectorPath(name));
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  wireActions();
  refresh();
  window.setInterval(refresh, POLL_MS);
});
