// gpu.js - one GPU (#/gpu/NODE/GPU?window=1h, or &start=&end= once zoomed):
// its readings now (from the stream) and its curves over a window of
// 5 min … 7 d, laid out by failure mode: health (memory with the
// time-to-OOM projection, temperature and clocks with throttling shaded
// and ECC/XID markers, power), throughput (utilization, SM active,
// occupancy, tensor), bottlenecks (DRAM against PCIe). Each curve is the
// PromQL a Grafana panel would ask /api/v1/query_range, shown under its
// chart (so the page agrees with Grafana for the same text). A window
// where that PromQL finds nothing (older than the raw retention) reads
// the same curves through gpulse's match= form, which the server answers
// from its 1-minute rollups (the page says which it drew). Dragging
// across a chart re-queries that window.
"use strict";
(function (GP) {
  const {h, fmt, stat} = GP;
  const WINDOWS = [["5m", 300], ["15m", 900], ["1h", 3600], ["6h", 21600], ["24h", 86400], ["7d", 604800]];
  const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
  // Up to this step (s) a curve is the plain selector: the instant value
  // at each step is then about every sample. Beyond it, the step's mean
  // over [step] (its max for memory and throttling, so peaks survive).
  const RAW_STEP = 15;

  const reEsc = (s) => s.replace(/["\\]/g, "\\$&");

  // The PromQL of each curve for one GPU at one step, by key.
  function exprsFor(node, gpu, step) {
    const l = `Hostname="${reEsc(node)}",gpu="${reEsc(gpu)}"`;
    const s = (name, more) => `${name}{${l}${more || ""}}`;
    const w = (fn, name, more) => step <= RAW_STEP ? s(name, more) : `${fn}_over_time(${s(name, more)}[${step}s])`;
    return {
      // gpulse's bytes, else dcgm-exporter's MiB (or on (gpu): the first that exists)
      used: `${w("max", "gpulse_gpu_memory_used_bytes")} or on (gpu) ${w("max", "DCGM_FI_DEV_FB_USED")} * 1048576`,
      total: `${s("gpulse_gpu_memory_total_bytes")} or on (gpu) (${s("DCGM_FI_DEV_FB_USED")} + ${s("DCGM_FI_DEV_FB_FREE")} + ${s("DCGM_FI_DEV_FB_RESERVED")}) * 1048576`,
      temp: w("avg", "DCGM_FI_DEV_GPU_TEMP"),
      clock: w("avg", "DCGM_FI_DEV_SM_CLOCK"),
      clockMax: `${s("gpulse_gpu_sm_clock_max_hertz")} / 1e+06`,
      // clocks held down: any clock-event reason but idle or app clocks
      throttle: `${w("max", "gpulse_gpu_clock_event_reasons", ',reason!~"gpu_idle|applications_clocks_setting"')} > 0`,
      // ECC and XID counters: a rise between two steps is an event
      events: `{__name__=~"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL|DCGM_FI_DEV_ECC_SBE_VOL_TOTAL|gpulse_gpu_xid_errors_total",${l}}`,
      power: w("avg", "DCGM_FI_DEV_POWER_USAGE"),
      limit: s("gpulse_gpu_power_limit_watts"),
      util: `${w("avg", "DCGM_FI_DEV_GPU_UTIL")} / 100`,
      sm: w("avg", "DCGM_FI_PROF_SM_ACTIVE"),
      occ: w("avg", "DCGM_FI_PROF_SM_OCCUPANCY"),
      tensor: w("avg", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
      dram: w("avg", "DCGM_FI_PROF_DRAM_ACTIVE"),
      rx: w("avg", "DCGM_FI_PROF_PCIE_RX_BYTES"),
      tx: w("avg", "DCGM_FI_PROF_PCIE_TX_BYTES"),
    };
  }
  // The same curves in gpulse's match= form (docs/api.md), which the
  // server reads from its 1-minute rollups for a long step or where raw
  // samples have expired (the PromQL engine reads raw samples only): per
  // key, alternatives tried in order (as `or on (gpu)`), each a selector,
  // its agg and by, and the unit factor its PromQL applies.
  function formsFor(node, gpu) {
    const l = `Hostname="${reEsc(node)}",gpu="${reEsc(gpu)}"`;
    const f = (name, agg, x) => Object.assign({match: `${name}{${l}}`, agg}, x || {});
    const mib = {scale: 1048576};
    return {
      used: [f("gpulse_gpu_memory_used_bytes", "max"), f("DCGM_FI_DEV_FB_USED", "max", mib)],
      total: [f("gpulse_gpu_memory_total_bytes", "avg"),
        Object.assign({match: `{__name__=~"DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_FB_RESERVED",${l}}`, agg: "sum"}, mib)],
      temp: [f("DCGM_FI_DEV_GPU_TEMP", "avg")],
      clock: [f("DCGM_FI_DEV_SM_CLOCK", "avg")],
      clockMax: [f("gpulse_gpu_sm_clock_max_hertz", "avg", {scale: 1e-6})],
      throttle: [{match: `gpulse_gpu_clock_event_reasons{${l},reason!~"gpu_idle|applications_clocks_setting"}`, agg: "max", by: "reason", positive: true}],
      events: [{match: `{__name__=~"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL|DCGM_FI_DEV_ECC_SBE_VOL_TOTAL|gpulse_gpu_xid_errors_total",${l}}`, agg: ""}], // each series, its name kept
      power: [f("DCGM_FI_DEV_POWER_USAGE", "avg")],
      limit: [f("gpulse_gpu_power_limit_watts", "avg")],
      util: [f("DCGM_FI_DEV_GPU_UTIL", "avg", {scale: 0.01})],
      sm: [f("DCGM_FI_PROF_SM_ACTIVE", "avg")],
      occ: [f("DCGM_FI_PROF_SM_OCCUPANCY", "avg")],
      tensor: [f("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "avg")],
      dram: [f("DCGM_FI_PROF_DRAM_ACTIVE", "avg")],
      rx: [f("DCGM_FI_PROF_PCIE_RX_BYTES", "avg")],
      tx: [f("DCGM_FI_PROF_PCIE_TX_BYTES", "avg")],
    };
  }
  // One key's answer in the form: the first alternative with data, its
  // values scaled (and only the positive ones where its PromQL says > 0).
  async function formQuery(alts, range, signal) {
    let last = null;
    for (const a of alts) {
      let u = `/api/v1/query_range?match=${encodeURIComponent(a.match)}&rollups=auto&${range}`;
      if (a.agg) u += `&agg=${a.agg}`;
      if (a.by) u += `&by=${encodeURIComponent(a.by)}`;
      const d = await GP.api(u, {signal});
      last = d;
      if (!d.result.length) continue;
      const k = a.scale || 1;
      for (const r of d.result) {
        r.values = r.values.map(([t, v]) => [t, String(+v * k)]).filter(([, v]) => !a.positive || +v > 0);
      }
      d.result = d.result.filter((r) => r.values.length);
      return d;
    }
    return last;
  }

  // Which curves each chart draws (its PromQL, in its series' order).
  const CHART_KEYS = {mem: ["used", "total"], temp: ["temp", "clock", "clockMax", "throttle", "events"],
    power: ["power", "limit"], util: ["util", "sm", "occ"], tensor: ["tensor"], bw: ["dram", "rx", "tx"]};

  function pickStep(span) {
    const raw = span / 300;
    for (const s of STEPS) if (s >= raw) return s;
    return Math.ceil(raw / 3600) * 3600;
  }

  // Least-squares line over the newest 10 minutes of (t, used), else the
  // newest 5, 2 or 1 (a job's one-off climb at start-up is not a trend):
  // [seconds until it reaches `total`, the span], or null when memory is
  // not rising steadily (the oom_predicted detector's test: R² ≥ 0.8).
  function projectOOM(x, used, total) {
    for (const span of [600, 300, 120, 60]) {
      const r = fitOOM(x, used, total, span);
      if (r !== null) return [r, span];
    }
    return null;
  }
  function fitOOM(x, used, total, span) {
    const tEnd = x[x.length - 1], pts = [];
    for (let i = 0; i < x.length; i++) if (used[i] !== null && x[i] > tEnd - span) pts.push([x[i], used[i]]);
    if (pts.length < 8 || !fmt.num(total)) return null;
    // Two passes about the means: Unix seconds squared lose the digits.
    const n = pts.length;
    let mx = 0, my = 0;
    for (const [a, b] of pts) { mx += a / n; my += b / n; }
    let vx = 0, vy = 0, cov = 0;
    for (const [a, b] of pts) { vx += (a - mx) ** 2; vy += (b - my) ** 2; cov += (a - mx) * (b - my); }
    if (vx <= 0 || vy <= 0) return null;
    const slope = cov / vx, r2 = cov * cov / (vx * vy);
    if (slope <= 0 || r2 < 0.8) return null;
    return Math.max(0, (total - pts[n - 1][1]) / slope);
  }

  GP.views.gpu = function (root, args, query) {
    const node = args[0], gpu = args[1];
    if (!node || gpu === undefined) { root.append(GP.errorBox("no GPU named")); return null; }
    let win = query.get("window") || "1h";
    let abs = query.get("start") && query.get("end") ? [+query.get("start"), +query.get("end")] : null;
    let charts = [], timer = null, ctl = null, alive = true;

    const title = h("h1", {}, h("a", {href: "#/fleet?node=" + encodeURIComponent(node), text: node}), ` · GPU ${gpu}`);
    const sub = h("p", {class: "sub"});
    const now = h("section", {class: "totals"});
    const winBar = h("div", {class: "windows", role: "group", "aria-label": "window"});
    const zoomNote = h("span", {class: "zoomnote"});
    const alertsBox = h("section", {class: "gpu-alerts"});
    const secs = {
      health: h("section", {class: "group"}, h("h2", {text: "Health"})),
      throughput: h("section", {class: "group"}, h("h2", {text: "Throughput"})),
      bottlenecks: h("section", {class: "group"}, h("h2", {text: "Bottlenecks"})),
    };
    const status = h("p", {class: "muted", text: "loading…"});
    root.append(title, sub, now, h("div", {class: "toolbar"}, winBar, zoomNote), alertsBox, status,
      secs.health, secs.throughput, secs.bottlenecks);

    function drawWindows() {
      winBar.replaceChildren(...WINDOWS.map(([name]) => h("button", {
        class: !abs && name === win ? "on" : "", text: name, dataset: {window: name},
        onclick: () => { win = name; abs = null; saveQuery(); reload(true); },
      })));
      zoomNote.replaceChildren();
      if (abs) {
        zoomNote.append(`${fmt.time(abs[0])} – ${fmt.time(abs[1])} `,
          h("button", {text: "back to live", onclick: () => { abs = null; saveQuery(); reload(true); }}));
      }
    }
    function saveQuery() {
      const q = new URLSearchParams();
      q.set("window", win);
      if (abs) { q.set("start", abs[0].toFixed(3)); q.set("end", abs[1].toFixed(3)); }
      GP.setQuery(q);
      drawWindows();
    }

    // Readings now, from the stream.
    const cur = {};
    for (const [k, label] of [["util", "utilization"], ["sm", "SM active"], ["mem", "memory"], ["temp", "temperature"],
      ["power", "power"], ["clock", "SM clock"], ["thr", "throttled"]]) {
      const s = stat(label, fmt.NA, k);
      cur[k] = s.querySelector(".v");
      now.append(s);
    }
    let jobSeen = null;
    function onGpus(doc) {
      const g = doc.gpus.find((x) => x.node === node && x.gpu === gpu);
      if (!g) return;
      const v = {
        util: fmt.pct(g.util), sm: fmt.pct(g.sm_active),
        mem: `${fmt.bytes(g.mem_used_bytes)} of ${fmt.bytes(g.mem_total_bytes)}`,
        temp: fmt.celsius(g.temp_c), power: `${fmt.watts(g.power_w)} of ${fmt.watts(g.power_limit_w)}`,
        clock: fmt.mhz(g.sm_clock_mhz), thr: g.throttled === null ? fmt.NA : g.throttled ? "yes" : "no",
      };
      for (const k in v) if (cur[k].textContent !== v[k]) cur[k].textContent = v[k];
      cur.thr.parentNode.classList.toggle("bad", !!g.throttled);
      if (jobSeen !== (g.job || "")) {
        jobSeen = g.job || "";
        sub.replaceChildren(g.model || "", g.uuid ? ` · ${g.uuid}` : "",
          g.job ? h("span", {}, " · job ", h("a", {href: GP.link.job(g.job), class: "joblink", text: g.job}), g.rank !== null ? ` rank ${g.rank}` : "") : " · no job");
      }
    }

    async function loadAlerts() {
      try {
        const al = await GP.api(`/api/v1/alerts?state=all&node=${encodeURIComponent(node)}&limit=200`);
        const mine = al.filter((a) => a.labels && a.labels.gpu === gpu).slice(0, 20);
        alertsBox.replaceChildren(h("h2", {text: "Alerts"}), GP.alertSplit(mine, loadAlerts, "no active alerts on this GPU"));
        return mine;
      } catch (e) { alertsBox.replaceChildren(GP.errorBox(e)); return []; }
    }

    async function reload(rebuild) {
      if (ctl) ctl.abort();
      ctl = new AbortController();
      let start, end;
      if (abs) [start, end] = abs;
      else {
        end = Date.now() / 1000;
        start = end - (WINDOWS.find((w) => w[0] === win) || WINDOWS[2])[1];
      }
      let step = pickStep(end - start);
      start = Math.floor(start / step) * step;
      end = Math.ceil(end / step) * step;
      const ex = exprsFor(node, gpu, step);
      const keys = Object.keys(ex);
      // The charts ask the same PromQL as Grafana would. Where it finds
      // nothing (a window older than the raw retention), the page asks
      // gpulse's match= form instead, which the server answers from its
      // 1-minute rollups and says so; the status line tells which.
      const forms = formsFor(node, gpu);
      const promql = (k) => GP.api(`/api/v1/query_range?query=${encodeURIComponent(ex[k])}&start=${start}&end=${end}&step=${step}`,
        {signal: ctl.signal});
      const viaForm = (k) => formQuery(forms[k], `start=${start}&end=${end}&step=${step}`, ctl.signal);
      const empty = (d) => !d || !d.result || !d.result.length;
      let res, alerts;
      try {
        [res, alerts] = await Promise.all([Promise.all(keys.map(promql)), loadAlerts()]);
        if (res.every(empty)) res = await Promise.all(keys.map(viaForm));
      } catch (e) {
        if (e.name === "AbortError") return;
        status.replaceChildren(GP.errorBox(e));
        return;
      }
      if (!alive) return;
      // On rollups the server's grid (whole minutes) is the one drawn.
      const ru = res.find((d) => d && d.resolution === "1m");
      if (ru) [start, end, step] = [ru.start, ru.end, ru.step];
      status.dataset.resolution = ru ? "1m" : "raw";
      status.textContent = `${fmt.time(start)} – ${fmt.time(end)}, one point per ${fmt.secs(step)}, ` +
        (ru ? "1-minute averages (rollups)" : "raw samples");
      const by = {};
      keys.forEach((k, i) => { by[k] = res[i].result; });
      draw(by, ex, start, end, step, alerts, rebuild);
    }

    function draw(by, ex, start, end, step, alerts, rebuild) {
      const one = (key) => (by[key] && by[key][0] ? by[key][0].values : []);
      const al = (keys) => GP.align(start, end, step, keys.map(one));
      const d = {};
      const mem = al(["used", "total"]);
      // Time to OOM: the oom_predicted alert's value when it is active, else
      // the page's own least-squares line; a dashed line to the total.
      const totalNow = [...mem.cols[1]].reverse().find((v) => v !== null);
      let li = mem.cols[0].length - 1;
      while (li >= 0 && mem.cols[0][li] === null) li--;
      const oomAlert = (alerts || []).find((a) => a.kind === "oom_predicted" && a.state !== "resolved");
      let tto = oomAlert && fmt.num(oomAlert.value) ? oomAlert.value : null, how = `the ${oomAlert ? oomAlert.state : ""} oom_predicted alert`;
      if (tto === null && li >= 0) {
        const p = projectOOM(mem.x.slice(0, li + 1), mem.cols[0].slice(0, li + 1), totalNow);
        if (p) { tto = p[0]; how = `the page's least-squares line over the newest ${p[1] / 60} min`; }
      }
      const proj = mem.cols[0].map(() => null);
      const mx = mem.x.slice(), cols = [mem.cols[0].slice(), mem.cols[1].slice()];
      let memNote = "no OOM projected (memory is not rising steadily)";
      if (tto !== null && li >= 0 && !abs) {
        const t0 = mem.x[li], u0 = mem.cols[0][li];
        const reach = Math.min(tto, (end - start) * 0.25);
        const t1 = t0 + Math.max(reach, step);
        const u1 = tto > 0 ? u0 + (totalNow - u0) * Math.min(1, (t1 - t0) / tto) : totalNow;
        proj[li] = u0;
        if (t1 > mx[mx.length - 1]) { mx.push(t1); cols[0].push(null); cols[1].push(totalNow); proj.push(u1); }
        else proj[Math.min(proj.length - 1, Math.round((t1 - start) / step))] = u1;
        memNote = `time to OOM: ${fmt.secs(tto)} (${how}), dashed`;
      }
      d.mem = {x: mx, cols: [cols[0], cols[1], proj]};

      d.util = al(["util", "sm", "occ"]);
      d.tensor = al(["tensor"]);
      d.bw = al(["dram", "rx", "tx"]);
      d.power = al(["power", "limit"]);
      d.temp = al(["temp", "clock", "clockMax"]);

      // Throttle periods: the steps where a reason's expression answers.
      const shade = [], reasons = new Set();
      for (const r of by.throttle || []) {
        const why = r.metric.reason || "?";
        for (const [t] of r.values) { shade.push([t - step, t]); reasons.add(why); }
      }
      shade.sort((a, b) => a[0] - b[0]);
      const merged = [];
      for (const s of shade) {
        const last = merged[merged.length - 1];
        if (last && s[0] <= last[1] + 1e-6) last[1] = Math.max(last[1], s[1]); else merged.push(s.slice());
      }
      // ECC and XID events: where a counter rises within the window.
      const markers = [];
      const rises = (vals, label) => {
        for (let i = 1; i < vals.length; i++) {
          const a = parseFloat(vals[i - 1][1]), b = parseFloat(vals[i][1]);
          if (b > a) markers.push({t: vals[i][0], label});
        }
      };
      const events = (name) => (by.events || []).filter((r) => r.metric.__name__ === name);
      for (const r of events("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")) rises(r.values, "ECC DBE");
      for (const r of events("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")) rises(r.values, "ECC SBE");
      for (const r of events("gpulse_gpu_xid_errors_total")) {
        rises(r.values, "XID " + (r.metric.xid || "?"));
        // A counter born inside the window with a non-zero first value.
        if (r.values.length && parseFloat(r.values[0][1]) > 0 && r.values[0][0] > start + step) markers.push({t: r.values[0][0], label: "XID " + (r.metric.xid || "?")});
      }

      const pctScale = {fmt: (v) => fmt.pct(v), fine: (v) => fmt.pct(v, 1), range: [0, 1]};
      const specs = [
        ["health", "mem", {title: "Memory used vs total", note: memNote,
          scales: {b: {fmt: fmt.bytes, range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
          series: [{label: "used", scale: "b", color: "--c1", fill: true}, {label: "total", scale: "b", color: "--muted"},
            {label: "projection", scale: "b", color: "--bad", dash: [6, 4], spanGaps: true}]}],
        ["health", "temp", {title: "Temperature and clocks", markers,
          note: merged.length ? `shaded: clocks held down (${[...reasons].join(", ")})` : "no throttling in this window" +
            (markers.length ? "" : "; no ECC or XID events"),
          scales: {c: {fmt: fmt.celsius, fine: (v) => fmt.n(v, 1) + " °C"}, m: {fmt: fmt.mhz, range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
          series: [{label: "temperature", scale: "c", color: "--c4"}, {label: "SM clock", scale: "m", color: "--c2"},
            {label: "max SM clock", scale: "m", color: "--muted"}]}],
        ["health", "power", {title: "Power vs limit",
          scales: {w: {fmt: fmt.watts, fine: (v) => fmt.n(v, 1) + " W", range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
          series: [{label: "power", scale: "w", color: "--c3", fill: true}, {label: "limit", scale: "w", color: "--bad", dash: [4, 4]}]}],
        ["throughput", "util", {title: "Utilization vs SM active vs occupancy", scales: {p: pctScale},
          series: [{label: "utilization", scale: "p", color: "--c1"}, {label: "SM active", scale: "p", color: "--c2"},
            {label: "SM occupancy", scale: "p", color: "--c3"}]}],
        ["throughput", "tensor", {title: "Tensor pipe activity", scales: {p: pctScale},
          series: [{label: "tensor active", scale: "p", color: "--c5", fill: true}]}],
        ["bottlenecks", "bw", {title: "DRAM activity vs PCIe", scales: {p: pctScale, r: {fmt: fmt.rate, range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
          series: [{label: "DRAM active", scale: "p", color: "--c1"}, {label: "PCIe RX", scale: "r", color: "--c2"},
            {label: "PCIe TX", scale: "r", color: "--c3"}]}],
      ];
      if (rebuild || !charts.length) {
        for (const c of charts) { c.destroy(); c.box.remove(); }
        charts = specs.map(([sec, key, spec]) => {
          const c = GP.chart(secs[sec], Object.assign({data: d[key], sync: "gpu", shade: key === "temp" ? merged : [], onZoom,
            promql: CHART_KEYS[key].map((k) => ex[k])}, spec));
          c.key = key;
          c.box.dataset.chart = key;
          return c;
        });
      } else {
        charts.forEach((c, i) => {
          c.setData(d[c.key], c.key === "temp" ? merged : [], c.key === "temp" ? markers : []);
          c.setPromql(CHART_KEYS[c.key].map((k) => ex[k]));
          const note = specs[i][2].note;
          const p = c.box.querySelector(".note");
          if (p && note && p.textContent !== note) p.textContent = note;
        });
      }
    }

    function onZoom(t0, t1) {
      if (t1 - t0 < 30) { const m = (t0 + t1) / 2; t0 = m - 15; t1 = m + 15; }
      abs = [t0, t1];
      saveQuery();
      reload(false);
    }

    drawWindows();
    reload(true);
    timer = setInterval(() => { if (!abs && !document.hidden) reload(false); }, 10000);
    if (GP.state.gpus) onGpus(GP.state.gpus);
    const offs = [GP.on("gpus", onGpus), GP.on("alert", (a) => { if (a.labels && a.labels.node === node && a.labels.gpu === gpu) loadAlerts(); })];
    return () => {
      alive = false;
      clearInterval(timer);
      if (ctl) ctl.abort();
      offs.forEach((f) => f());
      for (const c of charts) c.destroy();
    };
  };
})(window.GP);
