// job.js - one training job (#/job/ID): its ranks and their GPUs side by
// side (the straggler highlighted), step time per rank, throughput, GPU
// activity and memory per GPU, host CPU and RSS on one time axis, cost so
// far, goodput and its biggest badput, its alerts and recommendations with their evidence, and its
// report. From /api/v1/jobs/ID?series=1, query_range for the per-rank
// step series, /api/v1/alerts?job=, /api/v1/recommendations?job= and the
// stream's GPU readings.
"use strict";
(function (GP) {
  const {h, fmt, stat} = GP;
  const COLORS = ["--c1", "--c2", "--c3", "--c4", "--c5", "--c6", "--c7", "--c8"];
  const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
  const pickStep = (span) => STEPS.find((s) => s >= span / 300) || Math.ceil(span / 300 / 3600) * 3600;
  const reEsc = (s) => s.replace(/["\\]/g, "\\$&");
  const median = (a) => { const s = a.filter(fmt.num).sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 2)] : null; };

  // Goodput (docs/jobs.md "Goodput"): the share of the ranks' time that
  // trained the model, and the biggest badput with its share.
  function goodputStats(g) {
    if (!g) return [stat("goodput", fmt.NA, "goodput")];
    const part = g.biggest_badput;
    const share = part && g.wall_seconds > 0 ? g.seconds[part] / g.wall_seconds : null;
    return [stat("goodput", fmt.pct(g.ratio), "goodput"),
      stat("biggest badput", part ? `${part.replace("_", " ")} ${fmt.pct(share)}` : fmt.NA, "badput")];
  }

  GP.views.job = function (root, args) {
    const id = args.join("/");
    const enc = encodeURIComponent(id);
    let alive = true, charts = {}, timer = null;
    const head = h("h1", {}, "Job ", h("span", {class: "jobid", text: id}));
    const sub = h("p", {class: "sub"});
    const totals = h("section", {class: "totals"});
    const ranksBox = h("section", {id: "ranks"});
    const chartsBox = h("section", {class: "group"}, h("h2", {text: "Over time"}));
    const alertsBox = h("section", {id: "job-alerts"});
    const recsBox = h("section", {id: "job-recs"});
    const status = h("p", {class: "muted", text: "loading…"});
    root.append(head, sub, totals, status, h("h2", {text: "Ranks and GPUs"}), ranksBox, chartsBox,
      h("h2", {text: "Alerts"}), alertsBox, h("h2", {text: "Recommendations"}), recsBox);

    const reportUrl = `/api/v1/jobs/${enc}/report?format=html`;
    const report = h("a", {href: reportUrl, class: "report", target: "_blank", rel: "noopener", text: "HTML report",
      onclick: async (ev) => {
        // Behind auth a plain link cannot send the token: fetch, then save.
        if (!sessionStorage.getItem("gpulse.token")) return;
        ev.preventDefault();
        try {
          const r = await fetch(reportUrl, {headers: {Authorization: "Bearer " + sessionStorage.getItem("gpulse.token")}});
          const a = h("a", {href: URL.createObjectURL(await r.blob()), download: `gpulse-report-${id.replace(/[^\w.-]/g, "_")}.html`});
          a.click();
        } catch (e) { status.replaceChildren(GP.errorBox(e)); }
      }});

    let stepByRank = {}, liveByRank = {}, doc = null, alerts = [];

    function rankTable() {
      if (!doc) return;
      const live = GP.state.gpus ? GP.state.gpus.gpus.filter((g) => g.job === id) : [];
      liveByRank = {};
      for (const g of live) if (g.rank !== null) liveByRank[g.rank] = g;
      const gpuDoc = {};
      for (const g of doc.gpus || []) gpuDoc[g.node + "/" + g.gpu] = g;
      const med = median(Object.values(stepByRank));
      const medAct = median((doc.gpus || []).map((g) => g.activity_avg));
      const stragglers = new Set(alerts.filter((a) => a.kind === "straggler" && a.state !== "resolved" && a.labels.rank !== undefined).map((a) => String(a.labels.rank)));
      const ranks = (doc.ranks || []).slice().sort((a, b) => a.rank - b.rank);
      const rows = ranks.map((r) => {
        const g = liveByRank[String(r.rank)];
        const gd = g ? gpuDoc[g.node + "/" + g.gpu] : null;
        const st = stepByRank[String(r.rank)];
        const slow = (fmt.num(st) && fmt.num(med) && ranks.length >= 3 && st > med * 1.2) ||
          (gd && fmt.num(gd.activity_avg) && fmt.num(medAct) && ranks.length >= 3 && gd.activity_avg < medAct * 0.8);
        const strag = stragglers.has(String(r.rank)) || slow;
        return h("tr", {class: strag ? "straggler" : "", dataset: {rank: String(r.rank)}},
          h("td", {}, String(r.rank), strag ? h("span", {class: "tag bad", text: "straggler"}) : null),
          h("td", {text: r.node}), h("td", {text: r.local_rank === null || r.local_rank === undefined ? fmt.NA : String(r.local_rank)}),
          h("td", {}, g ? h("a", {href: GP.link.gpu(g.node, g.gpu), text: `${g.node}/${g.gpu}`}) : fmt.NA),
          h("td", {text: g ? GP.shortModel(g.model) : fmt.NA}),
          h("td", {text: fmt.secs(st)}),
          h("td", {text: gd ? fmt.pct(gd.activity_avg) : fmt.NA}),
          h("td", {text: g ? fmt.pct(fmt.num(g.sm_active) ? g.sm_active : g.util) : fmt.NA}),
          h("td", {text: g ? `${fmt.bytes(g.mem_used_bytes)} / ${fmt.bytes(g.mem_total_bytes)}` : fmt.NA}),
          h("td", {text: gd ? fmt.bytes(gd.peak_memory_bytes) + " (" + fmt.pct(gd.peak_memory_ratio) + ")" : fmt.NA}),
          h("td", {text: g ? fmt.celsius(g.temp_c) : fmt.NA}));
      });
      ranksBox.replaceChildren(h("table", {class: "ranks"},
        h("thead", {}, h("tr", {}, ...["rank", "node", "local", "GPU", "model", "step time", "activity avg", "activity now", "memory now", "peak memory", "temp"].map((t) => h("th", {text: t})))),
        h("tbody", {}, rows)));
    }

    function chart(key, spec, data, xr) {
      const sig = spec.series.length;
      if (charts[key] && charts[key].sig === sig) { charts[key].setData(data, null, null, xr); return; }
      if (charts[key]) { charts[key].destroy(); charts[key].box.remove(); }
      charts[key] = GP.chart(chartsBox, Object.assign({data, sync: "job", xRange: xr, height: 170}, spec));
      charts[key].sig = sig;
    }

    // MFU beside activity; its n/a reason or the gap explained as a tooltip.
    function mfuStat(t) {
      const el = stat("MFU" + (t.precision ? ` (${t.precision})` : ""), fmt.pct(t.mfu, 1));
      el.title = t.mfu_gap || t.mfu_reason || "model FLOP/s over the GPUs' peak (docs/jobs.md)";
      return el;
    }

    async function load() {
      try {
        const [d, al, recs] = await Promise.all([GP.api(`/api/v1/jobs/${enc}?series=1`),
          GP.api(`/api/v1/alerts?job=${enc}&state=all&limit=100`),
          GP.api(`/api/v1/recommendations?job=${enc}`).catch(() => [])]);
        if (!alive) return;
        doc = d; alerts = al;
        const t = d.totals || {};
        const cur = t.currency || "USD";
        sub.replaceChildren(h("span", {class: "state " + d.state, text: d.state}),
          ` · started ${fmt.time(d.start)}`, d.end ? ` · ended ${fmt.time(d.end)}` : "",
          ` · ${fmt.plural((d.nodes || []).length, "node", "nodes")}, ${fmt.plural((d.ranks || []).length, "rank", "ranks")}, ${fmt.plural((d.gpus || []).length, "GPU", "GPUs")} · `, report);
        const s = t.step_seconds || {};
        totals.replaceChildren(
          stat("cost so far", fmt.money(t.cost, cur)), stat("cost per hour", fmt.money(t.cost_per_hour, cur)),
          stat("projected total", fmt.money(t.projected_cost_total, cur)), stat("idle cost", fmt.money(t.cost_idle, cur)),
          stat("GPU-hours", fmt.n(t.gpu_hours, 2)), stat("activity avg", fmt.pct(t.activity_avg)),
          mfuStat(t),
          stat("steps/s", fmt.n(t.steps_per_second, 2)), stat("samples/s", fmt.n(t.samples_per_second, 0)),
          stat("step time mean / p90", `${fmt.secs(s.mean)} / ${fmt.secs(s.p90)}`), stat("data wait", fmt.pct(t.data_wait_ratio)),
          stat("host CPU cores", fmt.n(t.host_cpu_avg_cores, 1)), stat("host RSS peak", fmt.bytes(t.host_rss_peak_bytes)),
          stat("wall time", fmt.secs(d.wall_seconds)),
          ...goodputStats(d.goodput));

        alertsBox.replaceChildren(GP.alertSplit(al, load, "no active alerts for this job"));
        const mine = recs.find((j) => j.job === id);
        recsBox.replaceChildren(GP.recList(mine ? mine.recommendations : []));

        // Per-rank step time and summed throughput, on the job's span.
        if (!fmt.num(d.start)) { status.textContent = "no start time: no charts"; rankTable(); return; }
        const t0 = d.start, t1 = d.end || Date.now() / 1000;
        const step = pickStep(Math.max(60, t1 - t0));
        const a = Math.floor(t0 / step) * step, b = Math.ceil(t1 / step) * step;
        // PromQL, as a Grafana panel would ask it: each chart shows its
        // expression, to paste into Grafana or /api/v1/query_range.
        const q = (expr) => GP.api(`/api/v1/query_range?query=${encodeURIComponent(expr)}&start=${a}&end=${b}&step=${step}`);
        const jsel = `{job="${reEsc(id)}"}`;
        const stepExpr = `avg by (rank) (gpulse_job_step_duration_seconds${jsel})`;
        const thrExpr = `sum(rate(gpulse_job_samples_total${jsel}[${Math.max(2 * step, 60)}s]))`;
        const [stepRes, sampRes] = await Promise.all([
          q(stepExpr).catch(() => ({result: []})), q(thrExpr).catch(() => ({result: []}))]);
        if (!alive) return;
        // a job of one rank that never said it is rank 0 (docs/jobs.md): its series carry no rank label
        const rankOf = (r) => r.metric.rank !== undefined ? r.metric.rank
          : d.ranks && d.ranks.length === 1 && d.ranks[0].rank !== null ? String(d.ranks[0].rank) : "?";
        const rankRes = stepRes.result.slice().sort((x, y) => (+rankOf(x)) - (+rankOf(y)));
        stepByRank = {};
        for (const r of rankRes) {
          const recent = r.values.slice(-30).map((v) => parseFloat(v[1])).filter(Number.isFinite);
          stepByRank[rankOf(r)] = recent.length ? recent.reduce((x, y) => x + y, 0) / recent.length : null;
        }
        rankTable();
        const xr = [t0, t1];
        status.textContent = `${fmt.time(t0)} – ${d.end ? fmt.time(t1) : "now"}`;
        const stepData = GP.align(a, b, step, rankRes.map((r) => r.values));
        chart("steps", {title: "Step time per rank", promql: stepExpr, scales: {s: {fmt: fmt.secs, range: (u, lo, hi) => [0, Math.max(hi, 0.001)]}},
          series: rankRes.map((r, i) => ({label: "rank " + rankOf(r), scale: "s", color: COLORS[i % COLORS.length]}))}, stepData, xr);
        const rate = GP.align(a, b, step, [sampRes.result[0] ? sampRes.result[0].values : []]).cols[0];
        chart("thr", {title: "Throughput", promql: thrExpr, scales: {r: {fmt: (v) => fmt.n(v, 0) + "/s", range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
          series: [{label: "samples/s", scale: "r", color: "--c2", fill: true}]}, {x: stepData.x, cols: [rate]}, xr);
        const sg = (d.series && d.series.gpus) || [];
        const names = {};
        for (const g of d.gpus || []) names[g.uuid] = `${g.node}/${g.gpu}`;
        const gx = sg.length ? sg[0].t.map((v) => d.start + v) : [];
        const sameGrid = sg.every((g) => g.t.length === gx.length);
        if (sameGrid && sg.length) {
          chart("act", {title: "GPU activity per GPU", scales: {p: {fmt: (v) => fmt.pct(v), range: [0, 1]}},
            series: sg.map((g, i) => ({label: names[g.uuid] || g.uuid, scale: "p", color: COLORS[i % COLORS.length]}))},
            {x: gx, cols: sg.map((g) => g.activity)}, xr);
          chart("mem", {title: "Memory per GPU", scales: {b: {fmt: fmt.bytes, range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
            series: sg.map((g, i) => ({label: names[g.uuid] || g.uuid, scale: "b", color: COLORS[i % COLORS.length]}))},
            {x: gx, cols: sg.map((g) => g.memory_bytes)}, xr);
        }
        const host = d.series && d.series.host;
        if (host && host.t.length) {
          chart("host", {title: "Host CPU and RSS", scales: {c: {fmt: (v) => fmt.n(v, 1) + " cores", range: (u, lo, hi) => [0, Math.max(hi, 1)]},
            m: {fmt: fmt.bytes, range: (u, lo, hi) => [0, Math.max(hi, 1)]}},
          series: [{label: "CPU cores", scale: "c", color: "--c3"}, {label: "RSS", scale: "m", color: "--c4"}]},
          {x: host.t.map((v) => d.start + v), cols: [host.cpu_cores, host.rss_bytes]}, xr);
        }
      } catch (e) {
        if (alive) status.replaceChildren(GP.errorBox(e));
      }
    }
    load();
    timer = setInterval(() => { if (!document.hidden && doc && doc.state === "running") load(); }, 15000);
    let last = 0;
    const offs = [GP.on("gpus", () => { const n = Date.now(); if (n - last > 5000) { last = n; rankTable(); } }),
      GP.on("alert", (a) => { if (a.labels && a.labels.job === id) load(); })];
    return () => { alive = false; clearInterval(timer); offs.forEach((f) => f()); for (const k in charts) charts[k].destroy(); };
  };
})(window.GP);
