// The page's panels: "Usage" (GET /api/v1/usage: what you spent today, this week and this
// month, by model, and the limits; the same report as /usage) and, for Butler's owner only,
// "Status" (GET /api/v1/status: model and tiers with their prices, channels, MCP servers,
// skills, schedules with their next run, today's usage against the budgets, data folder and
// database), refreshed while open. Everything is built from text nodes: no HTML strings.
"use strict";

window.ButlerPanels = (() => {
  const $ = (id) => document.getElementById(id);
  let auth = { headers: () => ({}), userQuery: () => "" };
  let open = null; // "usage" | "status" while the dialog shows one
  let timer = null;

  async function get(path) {
    const res = await fetch(`${path}${auth.userQuery("?")}`, {
      headers: { Accept: "application/json", ...auth.headers() },
      cache: "no-store",
    });
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const err = (data && data.error) || {};
      const e = new Error(err.message || `HTTP ${res.status}`);
      e.status = res.status;
      throw e;
    }
    return data;
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text != null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function section(parent, title, rows) {
    parent.append(el("h3", title, "panel-heading"));
    const list = el("ul", null, "panel-list");
    if (rows.length === 0) list.append(el("li", "none", "panel-none"));
    for (const row of rows) list.append(el("li", row));
    parent.append(list);
  }

  function when(ms) {
    if (!ms) return "not scheduled";
    return new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  const usd = (n) => `$${Number(n || 0).toFixed(4)}`;

  function renderUsage(body, data) {
    const text = el("div", null, "panel-text");
    if (window.ButlerMarkdown) window.ButlerMarkdown.renderMarkdown(data.text || "", text);
    else text.textContent = data.text || "";
    body.append(text);
  }

  function renderStatus(body, s) {
    section(
      body,
      "Model",
      (s.models || []).map((m) => `${m.tier}: ${m.provider} ${m.model} at ${m.endpoint}`),
    );
    section(body, "Prices", s.prices || []);
    section(
      body,
      "Channels",
      (s.channels || []).map((c) => `${c.name}: ${c.state}, ${c.sent} sent, ${c.retried} retried, ${c.failed} failed`),
    );
    section(
      body,
      "MCP servers",
      (s.mcp || []).map((m) => `${m.name}: ${m.state}${m.tools.length ? ` (${m.tools.join(", ")})` : ""}`),
    );
    section(body, "Skills", s.skills || []);
    section(
      body,
      "Schedules",
      (s.schedules || []).map(
        (j) => `#${j.id} ${j.name} (${j.when}, ${j.tz})${j.paused ? " paused" : ""}: next ${when(j.next_fire_ms)}`,
      ),
    );
    const today = s.today || { cost_usd: 0, models: [] };
    const limits = [];
    if (s.max_usd_per_turn != null) limits.push(`$${s.max_usd_per_turn.toFixed(2)} per request`);
    if (s.max_usd_per_day != null) limits.push(`$${s.max_usd_per_day.toFixed(2)} per person per day`);
    section(body, "Today", [
      `${usd(today.cost_usd)} spent by everyone`,
      ...(today.models || []).map((m) => `${m.model}: ${usd(m.cost_usd)}`),
      limits.length ? `Limits: ${limits.join(", ")}` : "No spending limits are set",
    ]);
    section(body, "Data", [`Folder: ${s.data_dir}`, `Database: ${s.database}`, `Butler ${s.version}, up since ${when(s.started_ms)}`]);
  }

  async function fill() {
    const body = $("panel-body");
    try {
      const data = await get(open === "status" ? "/api/v1/status" : "/api/v1/usage");
      body.replaceChildren();
      if (open === "status") renderStatus(body, data);
      else renderUsage(body, data);
    } catch (e) {
      body.replaceChildren(el("p", `Could not load: ${e.message}`, "panel-error"));
    }
  }

  function show(which) {
    open = which;
    $("panel-title").textContent = which === "status" ? "Status" : "Usage";
    $("panel-body").replaceChildren(el("p", "Loading…"));
    const dialog = $("panel");
    if (!dialog.open) dialog.showModal();
    fill();
    clearInterval(timer);
    // Live while open: the facts change as Butler runs.
    timer = setInterval(() => {
      if (open && !document.hidden) fill();
    }, 5000);
  }

  function close() {
    open = null;
    clearInterval(timer);
    const dialog = $("panel");
    if (dialog.open) dialog.close();
  }

  /** Shows the Status button only to the owner (the API answers 403 to anyone else). */
  async function probe() {
    try {
      await get("/api/v1/status");
      $("status-btn").hidden = false;
    } catch {
      $("status-btn").hidden = true;
    }
  }

  function bind(a) {
    auth = a;
    $("usage-btn").addEventListener("click", () => show("usage"));
    $("status-btn").addEventListener("click", () => show("status"));
    $("panel-close").addEventListener("click", close);
    $("panel").addEventListener("close", () => {
      open = null;
      clearInterval(timer);
    });
    setTimeout(probe, 0);
    setInterval(() => {
      if (!document.hidden) probe();
    }, 30000);
  }

  return { bind, probe };
})();
