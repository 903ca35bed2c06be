// app.js - the router: hash routes (#/fleet, #/gpu/NODE/GPU, #/job/ID,
// #/alerts, #/recommendations), so every view is a link. Each view is
// GP.views[name](root, args, query) and returns its clean-up function
// (listeners, timers, charts), called before the next view mounts.
"use strict";
(function (GP) {
  GP.views = GP.views || {};
  let unmount = null;

  GP.parseHash = function () {
    const raw = location.hash.replace(/^#\/?/, "");
    const q = raw.indexOf("?");
    const path = (q < 0 ? raw : raw.slice(0, q)).split("/").filter((s) => s !== "").map(decodeURIComponent);
    const query = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
    return {name: path[0] || "fleet", args: path.slice(1), query};
  };

  // Sets the query part of the hash without a new view (filters, windows).
  GP.setQuery = function (query) {
    const {name, args} = GP.parseHash();
    const qs = query.toString();
    const hash = "#/" + [name, ...args.map(encodeURIComponent)].join("/") + (qs ? "?" + qs : "");
    history.replaceState(null, "", hash);
  };

  GP.link = {
    gpu: (node, gpu) => `#/gpu/${encodeURIComponent(node)}/${encodeURIComponent(gpu)}`,
    job: (id) => `#/job/${encodeURIComponent(id)}`,
  };

  GP.errorBox = function (e) {
    return GP.h("p", {class: "error", text: e && e.message ? e.message : String(e)});
  };

  function route() {
    const {name, args, query} = GP.parseHash();
    if (unmount) { try { unmount(); } catch (e) { console.error(e); } unmount = null; }
    const root = document.getElementById("app");
    root.replaceChildren();
    for (const a of document.querySelectorAll("header nav a")) {
      a.classList.toggle("active", a.dataset.view === name);
    }
    const view = GP.views[name] || GP.views.fleet;
    root.dataset.view = GP.views[name] ? name : "fleet";
    unmount = view(root, args, query) || null;
    window.scrollTo(0, 0);
  }

  // The alert count in the header, from the stream's fleet/gpus badges
  // and alert events (re-read on resync).
  let countTimer = null;
  GP.refreshCount = refreshCount;
  function refreshCount() {
    clearTimeout(countTimer);
    countTimer = setTimeout(async () => {
      try {
        const al = await GP.api("/api/v1/alerts?state=firing&limit=1000");
        const n = al.filter((a) => !a.silenced).length;
        const el = document.getElementById("alert-count");
        el.textContent = String(n);
        el.hidden = n === 0;
      } catch (e) { /* shown by the views */ }
    }, 300);
  }

  window.addEventListener("hashchange", route);
  window.addEventListener("DOMContentLoaded", () => {
    route();
    GP.prime().catch(() => {});
    GP.startStream();
    GP.on("alert", refreshCount);
    GP.on("resync", refreshCount);
  });
})(window.GP);
