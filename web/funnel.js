// funnel.js - the fleet view's funnel panel: over a chosen range (1 hour,
// 1 day, 7 days) the total, allocated, active and effective GPUs, the idle
// cost by job, user and team, and the zombie processes, as GET
// /api/v1/fleet/funnel computes them (docs/api.md "GET
// /api/v1/fleet/funnel"); nothing is recomputed here. Read again each
// minute while the view is open, ending now, or at the fleet view's
// funnel_end= (epoch seconds: a link to a past week's funnel, read once).
// The range asked for is on the panel (data-start, data-end).
"use strict";
(function (GP) {
  const {h, fmt, stat} = GP;
  const RANGES = [["1h", 3600, "last hour"], ["1d", 86400, "last day"], ["7d", 7 * 86400, "last 7 days"]];
  const STAGES = [["total", "total GPUs"], ["allocated", "allocated"], ["active", "active"], ["effective", "effective"]];
  const REFRESH_MS = 60000;
  // A number of GPUs: hundredths below 10 (a small fleet's hour is 0.13, not 0.1).
  GP.funnelGpus = (v) => fmt.n(v, fmt.num(v) && v < 10 ? 2 : 1);

  function groupTable(by, rows, cur) {
    if (!rows.length) return h("p", {class: "muted", text: `no allocated GPU time by ${by}`});
    const name = (r) => r[by] === null ? h("span", {class: "muted", text: "unknown"})
      : by === "job" ? h("a", {href: GP.link.job(r[by]), text: r[by]}) : r[by];
    return h("table", {class: "funnel-by", dataset: {by}},
      h("thead", {}, h("tr", {}, ...[by, "GPUs", "GPU-hours", "idle GPU-hours", "cost", "idle cost"].map((t) => h("th", {text: t})))),
      h("tbody", {}, ...rows.slice(0, 10).map((r) => h("tr", {},
        h("td", {}, name(r)), h("td", {text: fmt.count(r.gpus)}), h("td", {text: fmt.n(r.gpu_hours, 2)}),
        h("td", {text: fmt.n(r.idle_gpu_hours, 2)}), h("td", {text: fmt.money(r.cost, cur)}),
        h("td", {class: "idlecost", text: fmt.money(r.idle_cost, cur)})))));
  }

  GP.funnelPanel = function (query) {
    const pinned = Number(query && query.get("funnel_end")) || 0;
    let range = RANGES[1];
    const vals = {};
    const stages = h("div", {class: "totals funnel-stages"});
    const bars = {};
    for (const [k, label] of STAGES) {
      const s = stat(label, fmt.NA, "funnel-" + k);
      vals[k] = s.querySelector(".v");
      bars[k] = h("span", {class: "funnel-bar"});
      s.append(h("span", {class: "funnel-track"}, bars[k]));
      stages.append(s);
    }
    const money = h("div", {class: "totals"});
    for (const [k, label] of [["idle_cost", "idle cost"], ["idle_cost_allocated", "allocated but idle"],
      ["idle_cost_unallocated", "unallocated"], ["zombie_memory_bytes", "held by zombies"]]) {
      const s = stat(label, fmt.NA, "funnel-" + k);
      vals[k] = s.querySelector(".v");
      money.append(s);
    }
    const detail = h("div", {class: "funnel-detail"});
    const status = h("span", {class: "muted"});
    const buttons = RANGES.map((r) => h("button", {type: "button", dataset: {range: r[0]}, text: r[2],
      onclick: () => { range = r; load(); }}));
    const el = h("section", {class: "funnel", id: "fleet-funnel"},
      h("h2", {}, "Funnel ", h("span", {class: "ranges"}, ...buttons), " ", status),
      stages, money, detail);
    let timer = null, gen = 0;

    function show(d, start, end) {
      el.dataset.start = start;
      el.dataset.end = end;
      const cur = d.currency || "USD";
      const total = fmt.num(d.gpus.total) && d.gpus.total > 0 ? d.gpus.total : null;
      for (const [k] of STAGES) {
        const v = d.gpus[k];
        vals[k].textContent = GP.funnelGpus(v) + (k !== "total" && total ? ` (${fmt.pct(v / total)})` : "");
        bars[k].style.width = total && fmt.num(v) ? (Math.min(1, v / total) * 100).toFixed(1) + "%" : "0%";
      }
      for (const k of ["idle_cost", "idle_cost_allocated", "idle_cost_unallocated"]) vals[k].textContent = fmt.money(d[k], cur);
      vals.zombie_memory_bytes.textContent = fmt.bytes(d.zombie_memory_bytes) + ` · ${fmt.plural(d.zombies.length, "process", "processes")}`;
      vals.zombie_memory_bytes.parentNode.classList.toggle("bad", d.zombies.length > 0);
      const z = d.zombies.length ? h("table", {class: "zombies"},
        h("thead", {}, h("tr", {}, ...["zombie", "node", "GPU", "job", "memory", "job ended"].map((t) => h("th", {text: t})))),
        h("tbody", {}, ...d.zombies.slice(0, 20).map((p) => h("tr", {},
          h("td", {text: `${p.comm} (pid ${p.pid})`}), h("td", {text: p.node}),
          h("td", {}, h("a", {href: GP.link.gpu(p.node, p.gpu), text: p.gpu})), h("td", {text: p.job}),
          h("td", {text: fmt.bytes(p.memory_bytes)}), h("td", {text: fmt.time(p.job_ended)})))))
        : h("p", {class: "muted", text: "no zombie process: no GPU memory held after its job ended"});
      detail.replaceChildren(
        h("h3", {text: "Idle cost by job"}), groupTable("job", d.idle_cost_by.job, cur),
        h("h3", {text: "by user"}), groupTable("user", d.idle_cost_by.user, cur),
        h("h3", {text: "by team"}), groupTable("team", d.idle_cost_by.team, cur),
        h("h3", {text: "Zombie processes"}), z);
    }

    async function load() {
      clearTimeout(timer);
      const my = ++gen;
      for (const b of buttons) b.classList.toggle("on", b.dataset.range === range[0]);
      const end = pinned || Math.floor(Date.now() / 1000), start = end - range[1];
      status.textContent = "loading…";
      try {
        const d = await GP.api(`/api/v1/fleet/funnel?start=${start}&end=${end}`);
        if (my !== gen) return;
        show(d, start, end);
        status.textContent = `${range[2]}, as of ${fmt.clock(end)}`;
      } catch (e) {
        if (my === gen) status.textContent = "could not read the funnel: " + e.message;
      }
      if (my === gen && !pinned) timer = setTimeout(load, REFRESH_MS);
    }
    load();
    return {el, stop() { gen++; clearTimeout(timer); }};
  };
})(window.GP);
