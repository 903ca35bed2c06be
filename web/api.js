// api.js - the page's only way to the server: the public REST API
// (docs/api.md) with the bearer token, and the live stream
// (GET /api/v1/stream, read with fetch so Authorization can be sent;
// EventSource cannot set headers). A 401 asks for the token once (a
// <dialog>), keeps it in sessionStorage and retries. The stream
// reconnects after the server's `retry` (2 s) and then re-reads the
// alerts it may have missed (views listen for "resync").
"use strict";
(function (GP) {
  const KEY = {read: "gpulse.token", write: "gpulse.writeToken"};
  const store = window.sessionStorage;
  const listeners = new Map();
  GP.state = {fleet: null, gpus: null, gpusTime: 0, live: false};
  GP.stats = {events: 0, bytes: 0, parseMs: 0, handleMs: 0};

  GP.on = function (ev, fn) {
    if (!listeners.has(ev)) listeners.set(ev, new Set());
    listeners.get(ev).add(fn);
    return () => listeners.get(ev).delete(fn);
  };
  GP.emit = function (ev, data) {
    for (const fn of listeners.get(ev) || []) {
      try { fn(data); } catch (e) { console.error(e); }
    }
  };

  // One token prompt at a time; every caller that got 401 waits on it.
  let asking = null;
  function askToken(kind) {
    if (asking) return asking;
    const dlg = document.getElementById("token-dialog");
    const input = document.getElementById("token-input");
    dlg.querySelector("p").textContent = kind === "write"
      ? "This action needs the server's write token." : "This server asks for a token.";
    input.value = "";
    asking = new Promise((resolve) => {
      dlg.addEventListener("close", () => {
        const t = input.value.trim();
        if (t) store.setItem(KEY[kind], t);
        asking = null;
        resolve(!!t);
      }, {once: true});
      dlg.showModal();
      input.focus();
    });
    return asking;
  }

  function headers(kind, extra) {
    const hd = Object.assign({}, extra || {});
    const t = kind === "write" ? (store.getItem(KEY.write) || store.getItem(KEY.read)) : store.getItem(KEY.read);
    if (t) hd.Authorization = "Bearer " + t;
    return hd;
  }

  class ApiError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }
  GP.ApiError = ApiError;

  // GP.api(path, {method, body, signal}): the envelope's data, or throws
  // ApiError with the server's message.
  GP.api = async function (path, opts = {}) {
    const method = opts.method || "GET";
    const kind = method === "GET" ? "read" : "write";
    for (let tries = 0; ; tries++) {
      const init = {method, headers: headers(kind), signal: opts.signal};
      if (opts.body !== undefined) {
        init.body = JSON.stringify(opts.body);
        init.headers["Content-Type"] = "application/json";
      }
      const r = await fetch(path, init);
      if (r.status === 401 && tries < 3) {
        if (await askToken(kind)) continue;
      }
      let j = null;
      try { j = await r.json(); } catch (e) { /* not JSON */ }
      if (!r.ok || !j || j.status !== "success") {
        throw new ApiError(r.status, (j && j.error) || `${method} ${path}: HTTP ${r.status}`);
      }
      return j.data;
    }
  };

  // ---- the stream ---------------------------------------------------------
  let retryMs = 2000;
  let lastId = null;
  function setLive(on, text) {
    GP.state.live = on;
    const el = document.getElementById("live");
    el.textContent = text;
    el.classList.toggle("off", !on);
    GP.emit("live", on);
  }

  function dispatch(block) {
    let ev = "message", data = "", id = null;
    for (const line of block.split("\n")) {
      if (!line || line[0] === ":") continue;
      const i = line.indexOf(":");
      const k = i < 0 ? line : line.slice(0, i);
      let v = i < 0 ? "" : line.slice(i + 1);
      if (v[0] === " ") v = v.slice(1);
      if (k === "event") ev = v;
      else if (k === "data") data += (data ? "\n" : "") + v;
      else if (k === "id") id = v;
      else if (k === "retry" && /^\d+$/.test(v)) retryMs = +v;
    }
    if (id !== null) lastId = id;
    if (!data) return;
    let doc;
    const t0 = performance.now();
    try { doc = JSON.parse(data); } catch (e) { return; }
    const t1 = performance.now();
    if (ev === "fleet") GP.state.fleet = doc;
    else if (ev === "gpus") { GP.state.gpus = doc; GP.state.gpusTime = Date.now(); }
    GP.emit(ev, doc);
    // The page's own cost of the stream (the e2e load check prints it).
    const st = GP.stats;
    st.events++; st.bytes += data.length; st.parseMs += t1 - t0; st.handleMs += performance.now() - t1;
  }

  async function streamOnce() {
    const hd = headers("read");
    if (lastId !== null) hd["Last-Event-ID"] = lastId;
    const r = await fetch("/api/v1/stream?interval=1s", {headers: hd, cache: "no-store"});
    if (r.status === 401) return (await askToken("read")) ? "again" : "cancelled";
    if (!r.ok || !r.body) throw new Error("stream: HTTP " + r.status);
    setLive(true, "live");
    GP.emit("resync");
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        dispatch(buf.slice(0, i));
        buf = buf.slice(i + 2);
      }
    }
  }

  // A cancelled token prompt is not asked again every retry: the page
  // waits until the live indicator is clicked.
  function tokenClick() {
    const el = document.getElementById("live");
    setLive(false, "token needed: click");
    el.classList.add("ask");
    return new Promise((res) => el.addEventListener("click", () => {
      el.classList.remove("ask");
      res();
    }, {once: true}));
  }

  GP.startStream = async function () {
    for (;;) {
      let res = null;
      try {
        res = await streamOnce();
        if (res === "again") continue;  // a token was just entered
      } catch (e) { /* reconnect below */ }
      if (res === "cancelled") { await tokenClick(); continue; }
      setLive(false, "reconnecting");
      await new Promise((res) => setTimeout(res, retryMs));
    }
  };

  // Seed the state at once (the stream's first events follow within its
  // interval), so the first paint does not wait for it.
  GP.prime = async function () {
    const [gpus, fleet] = await Promise.all([GP.api("/api/v1/fleet/gpus"), GP.api("/api/v1/fleet")]);
    if (!GP.state.gpus) { GP.state.gpus = gpus; GP.state.gpusTime = Date.now(); GP.emit("gpus", gpus); }
    if (!GP.state.fleet) { GP.state.fleet = fleet; GP.emit("fleet", fleet); }
  };
})(window.GP);
