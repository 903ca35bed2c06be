// alerts.js - alerts (#/alerts: active and recent, with acknowledge and
// silence; the silences in force, with "end now") and recommendations
// (#/recommendations, with their evidence and estimated savings).
// GP.alertTable and GP.recList are shared with the GPU and job views.
"use strict";
(function (GP) {
  const {h, fmt} = GP;
  const SEV = {critical: "crit", warning: "warn", info: "info"};
  const DURATIONS = ["1h", "2h", "8h", "24h", "7d"];

  function target(a) {
    const l = a.labels || {};
    const out = [];
    if (l.node && l.gpu !== undefined) out.push(h("a", {href: GP.link.gpu(l.node, l.gpu), text: `${l.node}/${l.gpu}`}));
    else if (l.node) out.push(h("a", {href: "#/fleet?node=" + encodeURIComponent(l.node), text: l.node}));
    if (l.job) out.push(" ", h("a", {href: GP.link.job(l.job), text: l.job}), l.rank !== undefined ? ` #${l.rank}` : "");
    return out;
  }

  function silenceForm(a, done) {
    const l = a.labels || {};
    const matchers = {kind: a.kind};
    if (l.node) matchers.node = l.node;
    if (l.gpu !== undefined) matchers.gpu = l.gpu;
    if (!l.node && l.job) matchers.job = l.job;
    const dur = h("select", {name: "duration", "aria-label": "silence for"}, ...DURATIONS.map((d) => h("option", {value: d, text: d})));
    dur.value = "2h";
    const comment = h("input", {name: "comment", placeholder: "why (optional)", maxlength: "200"});
    const msg = h("span", {class: "msg"});
    const form = h("form", {class: "silence-form", onsubmit: async (ev) => {
      ev.preventDefault();
      msg.textContent = "…";
      try {
        // the server keeps a comment of at most 255 bytes: a long summary is cut
        let why = comment.value || `silenced from the dashboard (${a.summary || a.kind})`;
        while (new TextEncoder().encode(why).length > 255) why = why.slice(0, -2) + "…";
        const body = {matchers, duration: dur.value, comment: why};
        await GP.api("/api/v1/silences", {method: "POST", body});
        msg.textContent = "silenced";
        if (GP.refreshCount) GP.refreshCount();
        done();
      } catch (e) { msg.textContent = e.message; }
    }},
    "silence ", h("code", {text: Object.entries(matchers).map(([k, v]) => `${k}=${v}`).join(" ")}), " for ", dur, comment,
    h("button", {type: "submit", class: "primary", text: "Silence"}), msg);
    return form;
  }

  // A table of alerts with their actions; onChange re-reads after one.
  GP.alertTable = function (alerts, onChange) {
    const rows = alerts.map((a) => {
      const actions = h("td", {class: "actions"});
      const extra = h("tr", {class: "extra", hidden: true}, h("td", {colspan: "6"}));
      if (a.state !== "resolved") {
        actions.append(
          h("button", {text: a.acknowledged ? "Re-ack" : "Acknowledge", class: "ack", onclick: async (ev) => {
            ev.target.disabled = true;
            try { await GP.api(`/api/v1/alerts/${encodeURIComponent(a.id)}/ack`, {method: "POST", body: {by: "dashboard", comment: "acknowledged from the dashboard"}}); onChange(); }
            catch (e) { ev.target.disabled = false; ev.target.title = e.message; actions.append(h("span", {class: "error", text: e.message})); }
          }}),
          ...(a.silenced ? [] : [h("button", {text: "Silence…", class: "silence", onclick: () => {
            extra.hidden = !extra.hidden;
            if (!extra.hidden) extra.firstChild.replaceChildren(silenceForm(a, onChange));
          }})]));
      }
      const state = h("span", {class: "state " + a.state, text: a.state});
      const tags = [];
      if (a.silenced) tags.push(h("span", {class: "tag", text: "silenced"}));
      if (a.acknowledged) tags.push(h("span", {class: "tag", text: `ack ${a.acknowledged.by || ""}`.trim(), title: `${fmt.time(a.acknowledged.at)} ${a.acknowledged.comment || ""}`}));
      const tr = h("tr", {class: "alert " + (SEV[a.severity] || ""), dataset: {id: a.id, kind: a.kind}},
        h("td", {}, h("span", {class: "sev " + (SEV[a.severity] || ""), text: a.severity})),
        h("td", {}, h("b", {text: a.kind}), h("br"), state, " ", tags),
        h("td", {}, target(a)),
        h("td", {class: "summary"}, a.summary || "", a.evidence ? h("details", {}, h("summary", {text: "evidence"}), h("p", {text: a.evidence}), a.runbook ? h("p", {text: "runbook: " + a.runbook}) : null) : null),
        h("td", {class: "when", title: fmt.time(a.started)}, fmt.ago(a.started), a.resolved ? h("br") : null, a.resolved ? "resolved " + fmt.ago(a.resolved) : null),
        actions);
      return [tr, extra];
    });
    return h("table", {class: "alerts"}, h("thead", {}, h("tr", {}, ...["severity", "alert", "where", "summary", "since", ""].map((t) => h("th", {text: t})))),
      h("tbody", {}, rows.flat()));
  };

  // Active alerts in a table, resolved ones folded under it.
  GP.alertSplit = function (alerts, onChange, none) {
    const act = alerts.filter((a) => a.state !== "resolved"), res = alerts.filter((a) => a.state === "resolved");
    return h("div", {}, act.length ? GP.alertTable(act, onChange) : h("p", {class: "muted", text: none}),
      res.length ? h("details", {class: "resolved"}, h("summary", {text: `${res.length} resolved`}), GP.alertTable(res, onChange)) : null);
  };

  GP.views.alerts = function (root) {
    const active = h("section", {id: "active-alerts"}, h("p", {class: "muted", text: "loading…"}));
    const recent = h("section", {id: "recent-alerts"});
    const sil = h("section", {id: "silences"});
    root.append(h("h1", {text: "Alerts"}), h("h2", {text: "Active"}), active, h("h2", {text: "Silences"}), sil,
      h("h2", {text: "Resolved in the last 24 h"}), recent);
    let timer = null, alive = true;
    async function load() {
      try {
        const since = Date.now() / 1000 - 86400;
        const [act, res, sils] = await Promise.all([GP.api("/api/v1/alerts?state=active&limit=500"),
          GP.api(`/api/v1/alerts?state=resolved&since=${since.toFixed(0)}&limit=100`), GP.api("/api/v1/silences")]);
        if (!alive) return;
        const order = {critical: 0, warning: 1, info: 2};
        act.sort((a, b) => (a.silenced - b.silenced) || (order[a.severity] - order[b.severity]) || (b.started - a.started));
        active.replaceChildren(act.length ? GP.alertTable(act, soon) : h("p", {class: "muted", text: "no active alerts"}));
        recent.replaceChildren(res.length ? GP.alertTable(res, soon) : h("p", {class: "muted", text: "none"}));
        sil.replaceChildren(sils.length ? h("table", {class: "silences"},
          h("thead", {}, h("tr", {}, ...["matchers", "comment", "until", ""].map((t) => h("th", {text: t})))),
          h("tbody", {}, sils.map((s) => h("tr", {dataset: {id: s.id}},
            h("td", {}, h("code", {text: Object.entries(s.matchers || {}).map(([k, v]) => `${k}=${v}`).join(" ")})),
            h("td", {text: s.comment || ""}), h("td", {text: fmt.time(s.ends_at)}),
            h("td", {}, h("button", {text: "End now", onclick: async () => {
              try { await GP.api(`/api/v1/silences/${encodeURIComponent(s.id)}`, {method: "DELETE"}); soon(); }
              catch (e) { sil.append(GP.errorBox(e)); }
            }})))))) : h("p", {class: "muted", text: "no silences"}));
      } catch (e) { active.replaceChildren(GP.errorBox(e)); }
    }
    function soon() { clearTimeout(timer); timer = setTimeout(load, 250); }
    load();
    const offs = [GP.on("alert", soon), GP.on("resync", soon)];
    const poll = setInterval(load, 30000);
    return () => { alive = false; clearTimeout(timer); clearInterval(poll); offs.forEach((f) => f()); };
  };

  function saving(s, cur) {
    if (!s || s.type === "none") return s && s.method ? "no estimate: " + s.method : "";
    const parts = [];
    if (fmt.num(s.usd)) parts.push(fmt.money(s.usd, cur) + " saved");
    if (fmt.num(s.usd_per_gpu_hour)) parts.push(fmt.money(s.usd_per_gpu_hour, cur) + " per GPU-hour");
    if (fmt.num(s.seconds)) parts.push(fmt.secs(s.seconds) + " faster");
    if (fmt.num(s.fraction)) parts.push(fmt.pct(s.fraction) + " of the time");
    return parts.join(", ");
  }

  // One job's recommendations, each with its evidence and saving.
  GP.recList = function (recs) {
    if (!recs.length) return h("p", {class: "muted", text: "no recommendations"});
    return h("ul", {class: "recs"}, recs.map((r) => h("li", {class: "rec", dataset: {kind: r.kind}},
      h("b", {text: r.title || r.kind}), r.saving && r.saving.type !== "none" ? h("span", {class: "saving", text: saving(r.saving)}) : null,
      h("p", {text: r.text || ""}),
      h("p", {class: "evidence"}, "evidence: ", h("code", {text: r.evidence || ""}),
        fmt.num(r.confidence) ? ` · confidence ${fmt.pct(r.confidence)}` : "",
        r.saving && r.saving.method ? ` · ${r.saving.method}` : ""))));
  };

  GP.views.recommendations = function (root) {
    const list = h("section", {}, h("p", {class: "muted", text: "loading…"}));
    const total = h("p", {class: "sub"});
    root.append(h("h1", {text: "Recommendations"}), total, list);
    let alive = true;
    GP.api("/api/v1/recommendations?limit=50").then((jobs) => {
      if (!alive) return;
      let usd = 0, n = 0;
      for (const j of jobs) for (const r of j.recommendations) { n++; if (r.saving && fmt.num(r.saving.usd)) usd += r.saving.usd; }
      total.textContent = `${fmt.plural(n, "recommendation", "recommendations")} over ${fmt.plural(jobs.length, "job", "jobs")}` + (usd > 0 ? `; estimated savings ${fmt.money(usd)}` : "");
      const withRecs = jobs.filter((j) => j.recommendations.length);
      list.replaceChildren(...(withRecs.length ? withRecs.map((j) => h("section", {class: "job-recs"},
        h("h2", {}, h("a", {href: GP.link.job(j.job), text: j.job}), h("span", {class: "muted", text: " " + (j.state || "")})),
        GP.recList(j.recommendations))) : [h("p", {class: "muted", text: "no recommendations for the recent jobs"})]));
    }).catch((e) => list.replaceChildren(GP.errorBox(e)));
    return () => { alive = false; };
  };
})(window.GP);
