// fmt.js - the dashboard's shared helpers: units for people (GiB, W, °C,
// %), times in the browser's zone, and `h`, the one way views build DOM
// (no innerHTML, no style attributes: the server's CSP forbids inline
// style, so sizes and colours go through element.style or classes).
"use strict";
window.GP = window.GP || {};
window.GP.views = window.GP.views || {};
(function (GP) {
  const NA = "–";
  const num = (v) => typeof v === "number" && Number.isFinite(v);

  // Intl.NumberFormat objects are costly to make: one per digit count,
  // kept (the fleet view formats a few thousand numbers a second).
  const nf = [];
  function fixed(v, d) {
    const f = nf[d] || (nf[d] = new Intl.NumberFormat(undefined, {minimumFractionDigits: d, maximumFractionDigits: d}));
    return f.format(v);
  }
  const money = new Map();
  const fmt = {
    NA,
    num,
    pct(v, d = 0) { return num(v) ? fixed(v * 100, d) + " %" : NA; },
    bytes(v) {
      if (!num(v)) return NA;
      const u = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return fixed(v, i === 0 ? 0 : v < 10 ? 2 : v < 100 ? 1 : 0) + " " + u[i];
    },
    rate(v) { return num(v) ? fmt.bytes(v) + "/s" : NA; },
    watts(v) { return num(v) ? fixed(v, v < 100 ? 1 : 0) + " W" : NA; },
    celsius(v) { return num(v) ? fixed(v, 0) + " °C" : NA; },
    mhz(v) { return num(v) ? fixed(v, 0) + " MHz" : NA; },
    tflops(v) { return num(v) ? fixed(v, v < 100 ? 1 : 0) + " TFLOP/s" : NA; },
    money(v, cur = "USD") {
      if (!num(v)) return NA;
      try {
        let f = money.get(cur);
        if (!f) money.set(cur, f = new Intl.NumberFormat(undefined, {style: "currency", currency: cur || "USD", maximumFractionDigits: 2}));
        return f.format(v);
      } catch (e) { return fixed(v, 2) + " " + cur; }
    },
    count(v) { return num(v) ? fixed(v, 0) : NA; },
    // "1 node", "3 nodes": a count with its word, as the server's texts write it.
    plural(v, one, many) { return `${fmt.count(v)} ${v === 1 ? one : many}`; },
    n(v, d = 2) { return num(v) ? fixed(v, d) : NA; },
    secs(v) {
      if (!num(v)) return NA;
      if (v < 1) return fixed(v * 1000, 0) + " ms";
      if (v < 120) return fixed(v, 1) + " s";
      if (v < 7200) return fixed(v / 60, 0) + " min";
      if (v < 172800) return fixed(v / 3600, 1) + " h";
      return fixed(v / 86400, 1) + " d";
    },
    time(t) { return num(t) ? new Date(t * 1000).toLocaleString() : NA; },
    clock(t) { return num(t) ? new Date(t * 1000).toLocaleTimeString() : NA; },
    ago(t) {
      if (!num(t)) return NA;
      const d = Date.now() / 1000 - t;
      return d < 0 ? "now" : fmt.secs(d) + " ago";
    },
  };

  // h("div", {class: "x", onclick: fn, dataset: {k: v}}, child, "text", ...)
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") el.className = v;
        else if (k === "text") el.textContent = v;
        else if (k === "dataset") Object.assign(el.dataset, v);
        else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
        else if (v === true) el.setAttribute(k, "");
        else el.setAttribute(k, v);
      }
    }
    for (const c of kids.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  // A definition-list-like row of labelled numbers ("stats" boxes).
  function stat(label, value, cls) {
    return h("div", {class: "stat" + (cls ? " " + cls : "")}, h("span", {class: "v", text: value}), h("span", {class: "k", text: label}));
  }

  GP.fmt = fmt;
  GP.h = h;
  GP.stat = stat;
  GP.esc = encodeURIComponent;
})(window.GP);
