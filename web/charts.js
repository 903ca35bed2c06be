// charts.js - uPlot with the dashboard's habits: colours from CSS custom
// properties (light and dark), units on the axes and in the legend,
// cursors synced across a view's charts, drag to zoom handed to the view
// (which re-queries the window rather than zooming stale points),
// shaded periods (throttling) and event markers (ECC, XID).
"use strict";
(function (GP) {
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  // Aligns query_range results on one grid: {x: [...], cols: [[...]...]}.
  GP.align = function (start, end, step, seriesList) {
    const n = Math.floor((end - start) / step + 1e-9) + 1;
    const x = new Array(n);
    for (let i = 0; i < n; i++) x[i] = start + i * step;
    const cols = seriesList.map((vals) => {
      const c = new Array(n).fill(null);
      for (const [t, v] of vals || []) {
        const i = Math.round((t - start) / step);
        if (i >= 0 && i < n) c[i] = typeof v === "number" ? v : parseFloat(v);
      }
      return c;
    });
    return {x, cols};
  };

  // GP.chart(parent, {title, height, series: [{label, color: "--c1", scale,
  // fmt, dash, fill, width}], scales: {name: {fmt, range, side}}, data,
  // shade: [[t0, t1]...], markers: [{t, label}], onZoom(t0, t1), sync,
  // promql: the chart's PromQL, or a list (one per query), shown under it
  // (selectable, for Grafana)})
  GP.chart = function (parent, o) {
    const box = GP.h("div", {class: "chart"}, GP.h("h3", {text: o.title}));
    const plot = GP.h("div", {class: "plot"});
    box.append(plot);
    const code = GP.h("div", {class: "promqls"});
    const setPromql = (p) => {
      const list = (Array.isArray(p) ? p : [p]).filter(Boolean);
      box.querySelector("h3").title = list.length ? "PromQL: " + list.join("\n") : "";
      if (list.join("\n") === [...code.children].map((c) => c.textContent).join("\n")) return;
      code.replaceChildren(...list.map((e) => GP.h("code", {class: "promql", title: "PromQL of this chart: paste it into Grafana", text: e})));
    };
    setPromql(o.promql);
    box.append(code);
    if (o.note) box.append(GP.h("p", {class: "note", text: o.note}));
    parent.append(box);
    const axisColor = css("--muted") || "#888";
    const gridColor = css("--grid") || "rgba(128,128,128,.2)";
    const scaleNames = Object.keys(o.scales);
    const axes = [{stroke: axisColor, grid: {stroke: gridColor, width: 1}, ticks: {stroke: gridColor}}];
    scaleNames.forEach((name, i) => {
      const sc = o.scales[name];
      // Wide enough for the longest label ("1,500 MHz", "59.8 GiB").
      axes.push({scale: name, side: i === 0 ? 3 : 1, stroke: axisColor,
        size: (u, vals) => 20 + 8 * Math.max(4, ...(vals || []).map((v) => String(v).length)),
        grid: {show: i === 0, stroke: gridColor, width: 1}, ticks: {stroke: gridColor},
        values: (u, ticks) => {
          // A narrow range can round ticks to one label ("33 °C" thrice):
          // then the scale's finer format.
          const l = ticks.map((v) => sc.fmt(v));
          return new Set(l).size === l.length || !sc.fine ? l : ticks.map((v) => sc.fine(v));
        }});
    });
    let xRange = o.xRange || null;
    const scales = {x: {time: true, range: (u, lo, hi) => (xRange ? xRange : lo === null || lo === hi ? [(lo || 0) - 60, (hi || 0) + 60] : [lo, hi])}};
    for (const name of scaleNames) {
      const sc = o.scales[name];
      scales[name] = sc.range ? {range: sc.range} : {auto: true};
    }
    const series = [{}].concat(o.series.map((s) => {
      const color = css(s.color) || s.color;
      const r = {label: s.label, scale: s.scale, stroke: color, width: s.width || 1.5,
        value: (u, v) => (v === null || v === undefined ? "–" : (s.fmt || o.scales[s.scale].fmt)(v)),
        spanGaps: !!s.spanGaps, points: {show: false}};
      if (s.dash) r.dash = s.dash;
      if (s.fill) r.fill = color + "22";
      return r;
    }));
    let shade = o.shade || [], markers = o.markers || [];
    const shadeColor = css("--shade") || "rgba(255,140,0,.18)";
    const markColor = css("--bad") || "#d33";
    const hooks = {
      drawClear: [(u) => {
        if (!shade.length) return;
        const ctx = u.ctx;
        ctx.save();
        ctx.fillStyle = shadeColor;
        for (const [a, b] of shade) {
          const x0 = u.valToPos(a, "x", true), x1 = u.valToPos(b, "x", true);
          const l = Math.max(u.bbox.left, x0), r = Math.min(u.bbox.left + u.bbox.width, x1);
          if (r > l) ctx.fillRect(l, u.bbox.top, Math.max(1, r - l), u.bbox.height);
        }
        ctx.restore();
      }],
      draw: [(u) => {
        if (!markers.length) return;
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = markColor;
        ctx.fillStyle = markColor;
        ctx.lineWidth = 2 * devicePixelRatio;
        ctx.font = `${11 * devicePixelRatio}px sans-serif`;
        for (const m of markers) {
          const x = u.valToPos(m.t, "x", true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.fillText(m.label, x + 3 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
        }
        ctx.restore();
      }],
      setSelect: [(u) => {
        if (u.select.width < 4 || !o.onZoom) return;
        const t0 = u.posToVal(u.select.left, "x"), t1 = u.posToVal(u.select.left + u.select.width, "x");
        u.setSelect({left: 0, top: 0, width: 0, height: 0}, false);
        o.onZoom(t0, t1);
      }],
    };
    const width = () => Math.max(280, plot.clientWidth || parent.clientWidth || 600);
    const u = new uPlot({
      width: width(), height: o.height || 190, series, axes, scales, hooks,
      cursor: {sync: {key: o.sync || "gp"}, drag: {x: true, y: false, setScale: false}},
      legend: {live: true},
    }, [o.data.x, ...o.data.cols], plot);
    // Points drawn (non-null values): what tests check a chart is not blank by.
    const drawn = (d) => String(d.cols.reduce((n, c) => n + c.filter((v) => v !== null).length, 0));
    box.dataset.markers = String(markers.length);
    box.dataset.shaded = String(shade.length);
    box.dataset.points = drawn(o.data);
    const ro = new ResizeObserver(() => {
      const w = width();
      if (Math.abs(w - u.width) > 2) u.setSize({width: w, height: o.height || 190});
    });
    ro.observe(plot);
    return {
      u, box,
      setData(data, sh, mk, xr) {
        shade = sh || shade; markers = mk || markers; if (xr) xRange = xr;
        box.dataset.markers = String(markers.length);
        box.dataset.shaded = String(shade.length);
        box.dataset.points = drawn(data);
        u.setData([data.x, ...data.cols]);
      },
      setPromql,
      destroy() { ro.disconnect(); u.destroy(); },
    };
  };
})(window.GP);
