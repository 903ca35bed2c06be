// fleet.js - the fleet view (#/fleet?model=&node=&job=): totals from the
// stream's `fleet` events and one heat-map tile per GPU from its `gpus`
// events, and the funnel over a range (funnel.js). Tiles are built once and updated in place (a text node or a
// class changes only when its value does), so 512 GPUs at a 1 s refresh
// cost a few milliseconds a second on the main thread. A fleet without a
// GPU shows why, its nodes' host figures (the `fleet` event's `hosts`)
// and how to try a simulated fleet instead. Each node's head shows its
// health state (GET /api/v1/health/nodes, docs/health.md): the reasons
// and the action in its title, and "mark healthy" (the write token)
// where it is not healthy.
"use strict";
(function (GP) {
  const {h, fmt, stat} = GP;

  GP.shortModel = function (m) {
    if (!m) return "?";
    return m.replace(/^(NVIDIA|AMD)\s+/i, "").replace(/\s+(HBM\w*|SXM\w*|PCIe)$/i, "").replace(/^Instinct\s+/i, "");
  };
  const gpuKey = (g) => g.node + "/" + g.gpu + (g.mig !== null && g.mig !== undefined ? "/" + g.mig : "");
  const level = (u) => fmt.num(u) ? "lv" + Math.max(0, Math.min(10, Math.round(u * 10))) : "lvna";
  const SEV = {critical: "crit", warning: "warn", info: "info"};

  // Sets a text node's value only when it changed.
  function setText(obj, key, node, text) {
    if (obj[key] !== text) { obj[key] = text; node.textContent = text; }
  }

  // "31.7/79.6 GiB": one unit when both share it.
  function memPair(a, b) {
    const x = fmt.bytes(a), y = fmt.bytes(b);
    const ux = x.split(" ")[1], uy = y.split(" ")[1];
    return ux === uy ? `${x.split(" ")[0]}/${y}` : `${x}/${y}`;
  }

  function makeTile(g) {
    const t = {};
    t.idx = h("span", {class: "idx", text: g.gpu + (g.mig !== null && g.mig !== undefined ? "·" + g.mig : "")});
    t.model = h("span", {class: "model", text: GP.shortModel(g.model)});
    t.badge = h("span", {class: "badge", hidden: true});
    t.util = h("span", {class: "util"});
    t.fill = h("span", {class: "fill"});
    t.memText = h("span", {class: "memtext"});
    t.temp = h("span", {class: "temp"});
    t.power = h("span", {class: "power"});
    t.el = h("a", {class: "tile lvna", href: GP.link.gpu(g.node, g.gpu), dataset: {node: g.node, gpu: g.gpu}},
      h("span", {class: "row"}, t.idx, t.model, t.badge),
      t.util,
      h("span", {class: "mem"}, t.fill),
      h("span", {class: "row small memrow"}, t.memText),
      h("span", {class: "row small"}, t.temp, t.power));
    t.el.title = `${g.node} GPU ${g.gpu} · ${g.model || "unknown model"}`;
    return t;
  }

  // Identity for the filters (no DOM), then the DOM only when the tile is
  // on screen: an off-screen tile keeps its newest reading for later.
  function updateTile(t, g) {
    const job = g.job || "";
    if (t.job !== job) { t.job = job; t.el.dataset.job = job; }
    t.modelName = g.model || "";
    t.g = g;
    if (!t.visible && t.painted) { t.pending = g; return; }
    t.painted = true;
    t.pending = null;
    paintTile(t, g);
  }

  function paintTile(t, g) {
    const u = fmt.num(g.sm_active) ? g.sm_active : g.util;
    const idleAlloc = !!g.job && fmt.num(u) && u < 0.05;
    const a = g.alerts || {};
    const cls = "tile " + level(u) + (idleAlloc ? " idle-alloc" : "") + (g.throttled ? " throttled" : "") +
      (a.firing ? " alerting" : "");
    if (t.cls !== cls) { t.cls = cls; t.el.className = cls; }
    setText(t, "u", t.util, fmt.pct(u));
    const ratio = fmt.num(g.mem_used_bytes) && fmt.num(g.mem_total_bytes) && g.mem_total_bytes > 0
      ? g.mem_used_bytes / g.mem_total_bytes : null;
    const w = ratio === null ? "0%" : (Math.min(1, ratio) * 100).toFixed(1) + "%";
    if (t.w !== w) { t.w = w; t.fill.style.width = w; t.fill.classList.toggle("high", ratio !== null && ratio > 0.9); }
    setText(t, "m", t.memText, ratio === null ? "mem " + fmt.NA : memPair(g.mem_used_bytes, g.mem_total_bytes));
    setText(t, "tc", t.temp, fmt.celsius(g.temp_c));
    setText(t, "pw", t.power, fmt.watts(g.power_w));
    const n = (a.firing || 0) + (a.pending || 0);
    const bcls = "badge " + (SEV[a.severity] || "") + (a.firing ? "" : " pending");
    if (t.bn !== n || t.bcls !== bcls) {
      t.bn = n; t.bcls = bcls;
      t.badge.hidden = n === 0;
      t.badge.className = bcls;
      t.badge.textContent = n ? "⚠ " + n : "";
      t.badge.title = n ? `${a.firing || 0} firing, ${a.pending || 0} pending (${a.severity})` : "";
    }
  }

  // The empty state: why there is no tile, each node's host figures (live,
  // updated in place), and the simulated fleet to try.
  function emptyState() {
    const why = h("p", {class: "why"});
    const hostsEl = h("div", {class: "hosts"});
    const el = h("section", {class: "empty", id: "fleet-empty", hidden: true},
      h("h2", {text: "No GPU found"}), why, hostsEl,
      h("p", {class: "tip"}, "To try gpulse without a GPU, run a simulated fleet (16 H100s with training jobs and planted faults): ",
        h("code", {text: "gpulse up --simulate 2x8xH100"}), ". See docs/simulate.md (installed in /usr/share/doc/gpulse/)."));
    const cards = new Map();
    function card(node) {
      let c = cards.get(node);
      if (!c) {
        c = {};
        const st = (k, label) => { const s = stat(label, fmt.NA, k); c[k] = s.querySelector(".v"); return s; };
        c.el = h("div", {class: "hostcard", dataset: {node: node === null ? "" : node}},
          h("h3", {text: node === null ? "unnamed node (no Hostname label)" : node}),
          h("div", {class: "totals"}, st("cpu", "CPU busy"), st("mem", "memory used"), st("psi", "stalled: CPU · memory · I/O"), st("load", "load (1 min)")));
        cards.set(node, c);
      }
      return c;
    }
    function set(c, k, text) { if (c[k].textContent !== text) c[k].textContent = text; }
    function update(hosts) {
      const n = hosts.length;
      why.textContent = n === 0 ? "No agent has reported to this server yet: no GPU, and no host figures either."
        : n === 1 ? `${hosts[0].node || "The node reporting here"} reported no GPU: its agent found none (no NVIDIA GPU through NVML, no AMD card through amdgpu). Its host:`
          : `None of the ${n} nodes reporting to this server reported a GPU: their agents found none. Their hosts:`;
      const seen = new Set();
      for (const x of hosts) {
        const c = card(x.node);
        seen.add(x.node);
        if (c.el.parentNode !== hostsEl) hostsEl.append(c.el);
        set(c, "cpu", fmt.pct(x.cpu_busy) + (fmt.num(x.cpus) ? ` of ${fmt.count(x.cpus)} CPUs` : ""));
        set(c, "mem", fmt.num(x.memory_used_bytes) && fmt.num(x.memory_total_bytes) ? memPair(x.memory_used_bytes, x.memory_total_bytes) : fmt.NA);
        set(c, "psi", [x.cpu_pressure, x.memory_pressure, x.io_pressure].map((v) => fmt.pct(v, 1)).join(" · "));
        set(c, "load", fmt.n(x.load1));
      }
      for (const [node, c] of cards) if (!seen.has(node)) { c.el.remove(); cards.delete(node); }
    }
    return {el, update};
  }

  GP.views.fleet = function (root, args, query) {
    const filt = {model: query.get("model") || "", node: query.get("node") || "", job: query.get("job") || ""};
    const tot = {};
    const totalsEl = h("section", {class: "totals"});
    const keys = [
      ["gpus", "GPUs"], ["busy", "busy"], ["idle", "idle"], ["allocated_idle", "allocated but idle"],
      ["effective_tflops", "effective TFLOP/s"], ["cost_per_hour", "cost per hour"],
      ["wasted_cost_per_hour", "wasted per hour"], ["h100_equivalents_used", "H100-equivalents used"],
    ];
    for (const [k, label] of keys) {
      const s = stat(label, fmt.NA, k);
      tot[k] = s.querySelector(".v");
      totalsEl.append(s);
    }
    const sel = {};
    const mkSel = (k, label) => {
      sel[k] = h("select", {name: k, "aria-label": label, onchange: () => { filt[k] = sel[k].value; applyFilter(true); }},
        h("option", {value: "", text: "all " + label}));
      return sel[k];
    };
    const shown = h("span", {class: "shown"});
    const filters = h("section", {class: "filters"}, mkSel("model", "models"), mkSel("node", "nodes"),
      mkSel("job", "jobs"), shown,
      h("span", {class: "legend"}, "compute ", ...[0, 2, 4, 6, 8, 10].map((l) => h("span", {class: "sw lv" + l, text: l * 10 + "%"}))));
    const grid = h("section", {class: "grid", id: "fleet-grid"});
    const loading = h("p", {class: "muted", text: "waiting for the fleet…"});
    const empty = emptyState();
    const funnel = GP.funnelPanel(query);
    root.append(h("h1", {text: "Fleet"}), totalsEl, funnel.el, filters, loading, empty.el, grid);
    let gpusNow = null, fleetGpus = null;
    // No GPU now, none ever shown on this page (a GPU gone quiet keeps its
    // faded tile), and the fleet agrees: the empty state.
    function showEmpty(hosts) {
      const on = gpusNow === 0 && fleetGpus === 0 && !tiles.size;
      if (on && hosts) empty.update(hosts);
      if (empty.el.hidden === on) { empty.el.hidden = !on; totalsEl.hidden = on; filters.hidden = on; funnel.el.hidden = on; }
    }

    const tiles = new Map();
    const groups = new Map();
    const byEl = new WeakMap();
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const t = byEl.get(e.target);
        if (!t) continue;
        t.visible = e.isIntersecting;
        if (t.visible && t.pending) { paintTile(t, t.pending); t.pending = null; }
      }
    }, {rootMargin: "300px 0px"});
    let optSig = "";

    function group(node) {
      let gr = groups.get(node);
      if (!gr) {
        const jobs = h("span", {class: "jobs"});
        const health = h("span", {class: "health", hidden: true});
        const mark = h("button", {class: "mark-healthy", text: "mark healthy", hidden: true, onclick: () => markHealthy(node, mark)});
        gr = {el: h("div", {class: "node", dataset: {node}}, h("div", {class: "nodehead"}, h("span", {class: "nodename", text: node}), health, mark, jobs), h("div", {class: "tiles"})), jobs, jobSig: "", health, mark, healthSig: ""};
        gr.tiles = gr.el.lastChild;
        grid.append(gr.el);
        groups.set(node, gr);
      }
      return gr;
    }

    // The health states: asked for only once GPUs came (the token works),
    // then at most every 5 s with the GPUs' updates.
    let healthAt = 0;
    function paintHealth(gr, n) {
      const st = n ? n.state : "";
      const pf = n && n.preflight;
      const sig = n ? st + "|" + n.action + "|" + n.reasons.map((r) => r.gpu + r.fault + r.present).join(",") +
        "|" + (pf ? pf.ok + pf.at + pf.summary : "") : "";
      if (gr.healthSig === sig) return;
      gr.healthSig = sig;
      gr.health.hidden = !n;
      gr.mark.hidden = !n || st === "healthy";
      if (!n) return;
      gr.health.textContent = st;
      gr.health.className = "health " + st;
      // the last preflight (gpulse check) goes with it: a failed one keeps
      // the node degraded until a passing one, so say which it was
      const pfLine = pf ? `\npreflight ${pf.ok ? "passed" : "failed"} ${fmt.time(pf.at)}: ${pf.summary}` +
        (pf.ok ? "" : " (degraded until a passing gpulse check)") : "";
      gr.health.title = (n.reasons.length
        ? `${st} since ${fmt.time(n.since)}: ${n.action_text}\n` +
          n.reasons.map((r) => `GPU ${r.gpu}: ${r.title} (${r.action_text}${r.present ? "" : ", no longer found: mark healthy once repaired"})`).join("\n")
        : `${st} since ${fmt.time(n.since)}`) + pfLine;
      gr.health.classList.toggle("preflight-failed", !!pf && !pf.ok);
    }
    async function pollHealth(force) {
      if (!force && Date.now() - healthAt < 5000) return;
      healthAt = Date.now();
      try {
        const nodes = await GP.api("/api/v1/health/nodes");
        const by = new Map(nodes.map((n) => [n.node, n]));
        for (const [node, gr] of groups) paintHealth(gr, by.get(node));
      } catch (e) { /* the next update asks again */ }
    }
    async function markHealthy(node, btn) {
      btn.disabled = true;
      try {
        await GP.api(`/api/v1/health/nodes/${encodeURIComponent(node)}/healthy`, {method: "POST", body: {by: "dashboard", comment: "marked healthy from the dashboard"}});
        await pollHealth(true);
      } catch (e) { btn.title = e.message; }
      btn.disabled = false;
    }

    function fillOptions(gpus) {
      const sets = {model: new Set(), node: new Set(), job: new Set()};
      for (const g of gpus) {
        if (g.model) sets.model.add(g.model);
        sets.node.add(g.node);
        if (g.job) sets.job.add(g.job);
      }
      const sig = [...sets.model].join("|") + "#" + [...sets.node].join("|") + "#" + [...sets.job].join("|");
      if (sig === optSig) return;
      optSig = sig;
      for (const k of ["model", "node", "job"]) {
        const cur = filt[k];
        const vals = [...sets[k]].sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
        if (cur && !sets[k].has(cur)) vals.unshift(cur);
        sel[k].replaceChildren(sel[k].firstChild, ...vals.map((v) => h("option", {value: v, text: k === "model" ? GP.shortModel(v) : v})));
        sel[k].value = cur;
      }
    }

    function applyFilter(fromUser) {
      if (fromUser) {
        const q = new URLSearchParams();
        for (const k of ["model", "node", "job"]) if (filt[k]) q.set(k, filt[k]);
        GP.setQuery(q);
      }
      let n = 0, busy = 0, idle = 0, allocIdle = 0;
      const nodeShown = new Map();
      for (const t of tiles.values()) {
        const ok = (!filt.model || t.modelName === filt.model) && (!filt.node || t.el.dataset.node === filt.node) &&
          (!filt.job || t.job === filt.job);
        if (t.hiddenF !== !ok) { t.hiddenF = !ok; t.el.hidden = !ok; }
        if (!ok) continue;
        n++;
        nodeShown.set(t.el.dataset.node, true);
        const u = t.g ? (fmt.num(t.g.sm_active) ? t.g.sm_active : t.g.util) : null;
        if (fmt.num(u)) { if (u >= 0.05) busy++; else { idle++; if (t.job) allocIdle++; } }
      }
      for (const [node, gr] of groups) gr.el.hidden = !nodeShown.get(node);
      // The totals above are the fleet's; the filtered GPUs' own counts here.
      shown.textContent = `showing ${n} of ${fmt.plural(tiles.size, "GPU", "GPUs")}` +
        (n < tiles.size ? `: ${busy} busy, ${idle} idle, ${allocIdle} allocated but idle` : "");
    }

    function onGpus(doc) {
      loading.remove();
      gpusNow = doc.gpus.length;
      showEmpty(GP.state.fleet && GP.state.fleet.hosts);
      const seen = new Set();
      const nodeJobs = new Map();
      let added = false;
      if (!tiles.size) {
        const names = [...new Set(doc.gpus.map((g) => g.node))].sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
        names.forEach(group);
      }
      grid.classList.toggle("compact", doc.gpus.length > 64);
      for (const g of doc.gpus) {
        const k = gpuKey(g);
        seen.add(k);
        let t = tiles.get(k);
        if (!t) {
          t = makeTile(g);
          tiles.set(k, t);
          byEl.set(t.el, t);
          group(g.node).tiles.append(t.el);
          io.observe(t.el);
          added = true;
        }
        updateTile(t, g);
        if (t.gone) { t.gone = false; t.el.classList.remove("gone"); }
        if (g.job) {
          if (!nodeJobs.has(g.node)) nodeJobs.set(g.node, new Set());
          nodeJobs.get(g.node).add(g.job);
        }
      }
      for (const [k, t] of tiles) {
        if (!seen.has(k) && !t.gone) { t.gone = true; t.el.classList.add("gone"); t.cls = null; }
      }
      for (const [node, gr] of groups) {
        const js = [...(nodeJobs.get(node) || [])];
        const sig = js.join(",");
        if (sig !== gr.jobSig) {
          gr.jobSig = sig;
          gr.jobs.replaceChildren(...js.slice(0, 6).map((j) => h("a", {href: GP.link.job(j), text: j})),
            js.length > 6 ? ` +${js.length - 6}` : "");
        }
      }
      fillOptions(doc.gpus);
      pollHealth(false);
      if (added || filt.model || filt.node || filt.job || !shown.textContent) applyFilter();
    }

    function onFleet(doc) {
      const o = doc.overall || {};
      const cur = o.currency || "USD";
      const v = {
        gpus: fmt.count(o.gpus), busy: fmt.count(o.busy), idle: fmt.count(o.idle),
        allocated_idle: fmt.count(o.allocated_idle),
        effective_tflops: fmt.num(o.effective_tflops) ? fmt.n(o.effective_tflops, 0) + (fmt.num(o.peak_tflops) ? " of " + fmt.n(o.peak_tflops, 0) : "") : fmt.NA,
        cost_per_hour: fmt.money(o.cost_per_hour, cur), wasted_cost_per_hour: fmt.money(o.wasted_cost_per_hour, cur),
        h100_equivalents_used: fmt.num(o.h100_equivalents_used) ? fmt.n(o.h100_equivalents_used, 1) + " of " + fmt.n(o.h100_equivalents, 1) : fmt.NA,
      };
      for (const k in v) if (tot[k].textContent !== v[k]) tot[k].textContent = v[k];
      tot.allocated_idle.parentNode.classList.toggle("bad", (o.allocated_idle || 0) > 0);
      fleetGpus = o.gpus;
      showEmpty(doc.hosts || []);
    }

    if (GP.state.gpus) onGpus(GP.state.gpus);
    if (GP.state.fleet) onFleet(GP.state.fleet);
    const offs = [GP.on("gpus", onGpus), GP.on("fleet", onFleet)];
    return () => { io.disconnect(); funnel.stop(); offs.forEach((f) => f()); };
  };
})(window.GP);
