// sparkhost status page: polls /api/status and /api/history once a second
// and draws the plots on canvases. No dependencies, nothing from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

function fmtDuration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
}

function fmt(v, digits) {
  return v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function setBadge(el, ok, text, title) {
  el.textContent = text;
  el.title = title;
  el.className = "badge " + (ok ? "ok" : "bad");
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function renderStatus(s) {
  $("name").textContent = s.name;
  $("version").textContent = s.version;
  $("players").textContent = s.players;
  $("max-players").textContent = s.max_players;
  $("map").textContent = s.map;
  $("mode").textContent = s.mode;
  $("match-state").textContent = s.match_state + (s.round ? " (round " + s.round + ")" : "") +
    (s.draining ? " — draining: admitting nobody, stopping by " + s.drain_deadline : "");
  $("tick-rate").textContent = s.tick_rate;
  $("ticks").textContent = s.ticks;
  $("overruns").textContent = s.tick_overruns;
  $("uptime").textContent = fmtDuration(s.uptime_seconds);
  $("served").textContent = s.connections_served;
  setBadge($("health"), s.healthy, s.healthy ? "healthy" : "unhealthy", s.health);
  setBadge($("ready"), s.ready, s.ready ? "ready" : "not ready", s.readiness);

  const mods = $("module-rows");
  mods.replaceChildren();
  for (const m of s.modules) {
    const tr = document.createElement("tr");
    tr.dataset.module = m.name;
    cell(tr, m.name);
    cell(tr, m.kind);
    cell(tr, m.version);
    const st = cell(tr, m.state, "state-" + m.state);
    st.dataset.field = "state";
    if (m.last_error) st.title = m.last_error;
    cell(tr, m.faults).dataset.field = "faults";
    cell(tr, m.restarts).dataset.field = "restarts";
    cell(tr, m.inbox_depth + " / " + m.inbox_capacity);
    cell(tr, m.inbox_drops);
    cell(tr, fmt(m.tick_seconds, 2) + " s");
    cell(tr, m.metrics.map((x) => x.name + " " + fmt(x.value, 0)).join(", "));
    mods.appendChild(tr);
  }
  const rooms = $("room-rows");
  rooms.replaceChildren();
  for (const r of s.rooms) {
    const tr = document.createElement("tr");
    tr.dataset.room = r.id;
    cell(tr, r.id);
    cell(tr, r.name + (r.password ? " 🔒" : ""));
    cell(tr, r.mode);
    cell(tr, r.map);
    cell(tr, r.state, "state-" + r.state).dataset.field = "state";
    cell(tr, r.players + " / " + r.capacity).dataset.field = "players";
    cell(tr, r.owner || "–");
    rooms.appendChild(tr);
  }
  $("rooms-summary").textContent = s.rooms.length + " of at most " + s.rooms_max + ", " + s.lobby_players + " in the lobby";
  const players = $("player-rows");
  players.replaceChildren();
  for (const p of s.player_list) {
    const tr = document.createElement("tr");
    tr.dataset.id = p.id;
    cell(tr, p.id);
    cell(tr, p.name).dataset.field = "name";
    cell(tr, p.held ? "away (seat held)" : fmt(p.ping_ms, 1)).dataset.field = "ping";
    cell(tr, fmt(p.loss * 100, 1) + " %").dataset.field = "loss";
    cell(tr, fmt(p.up / 1000, 1));
    cell(tr, fmt(p.down / 1000, 1));
    cell(tr, fmt(p.rtt_var_ms, 1)).dataset.field = "rtt_var";
    cell(tr, p.bandwidth > 0 ? fmt(p.bandwidth / 1000, 1) : "–").dataset.field = "bandwidth";
    cell(tr, p.send_rate > 0 ? fmt(p.send_rate / 1000, 1) : "–").dataset.field = "send_rate";
    cell(tr, fmt(p.queue_delay_ms, 1) + (p.backlogged ? " (backlogged)" : "")).dataset.field = "queue_delay";
    players.appendChild(tr);
  }
  $("updated").textContent = new Date().toLocaleTimeString();
}

// plot draws series (arrays of numbers) over times t on a canvas, the
// y axis from 0 to a rounded maximum, with the newest sample at the right.
function plot(canvas, t, series, colors, opts) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
  if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const left = 44, right = 8, top = 8, bottom = 18;
  const pw = w - left - right, ph = h - top - bottom;
  let ymax = opts.min || 1;
  for (const s of series) for (const v of s) ymax = Math.max(ymax, v * 1.1);
  const step = niceStep(ymax / 4);
  ymax = Math.ceil(ymax / step) * step;
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = css("--mute");
  g.strokeStyle = css("--line");
  g.lineWidth = 1;
  for (let y = 0; y <= ymax + step / 2; y += step) {
    const py = top + ph - y / ymax * ph;
    g.beginPath(); g.moveTo(left, py); g.lineTo(left + pw, py); g.stroke();
    g.fillText(fmt(y, step < 1 ? 1 : 0), 2, py + 4);
  }
  const span = opts.span * 1000, t1 = t.length ? t[t.length - 1] : Date.now(), t0 = t1 - span;
  g.fillText("-" + Math.round(opts.span / 60) + " min", left, h - 4);
  g.fillText("now", left + pw - 20, h - 4);
  const x = (ti) => left + (ti - t0) / span * pw;
  const y = (v) => top + ph - Math.min(v, ymax) / ymax * ph;
  if (opts.ref !== undefined) {
    g.strokeStyle = css("--c2"); g.setLineDash([4, 3]);
    g.beginPath(); g.moveTo(left, y(opts.ref)); g.lineTo(left + pw, y(opts.ref)); g.stroke();
    g.setLineDash([]);
  }
  series.forEach((s, k) => {
    g.strokeStyle = css(colors[k]); g.lineWidth = 1.5;
    g.beginPath();
    s.forEach((v, i) => (i ? g.lineTo(x(t[i]), y(v)) : g.moveTo(x(t[i]), y(v))));
    g.stroke();
    if (s.length) { // the newest value, so a short history still shows
      g.fillStyle = css(colors[k]);
      g.beginPath(); g.arc(x(t[s.length - 1]), y(s[s.length - 1]), 2.5, 0, 2 * Math.PI); g.fill();
    }
  });
  canvas.dataset.points = t.length;
}

function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  const f = x / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

function renderHistory(hs) {
  const span = Math.max(60, hs.t.length * hs.period);
  const kb = (a) => a.map((v) => v / 1000);
  plot($("plot-tick"), hs.t, [hs.tick_avg_ms, hs.tick_peak_ms], ["--c0", "--c1"], { span, ref: 1000 / hs.tick_rate, min: 1000 / hs.tick_rate });
  plot($("plot-players"), hs.t, [hs.players], ["--c0"], { span, min: 1 });
  plot($("plot-bandwidth"), hs.t, [kb(hs.bytes_in), kb(hs.bytes_out)], ["--c0", "--c1"], { span, min: 1 });
  plot($("plot-drops"), hs.t, [hs.drops], ["--c1"], { span, min: 1 });
}

async function refresh() {
  try {
    const [s, hs] = await Promise.all([fetch("api/status").then((r) => r.json()), fetch("api/history").then((r) => r.json())]);
    renderStatus(s);
    renderHistory(hs);
    document.body.dataset.refreshed = String((Number(document.body.dataset.refreshed) || 0) + 1);
  } catch (e) {
    setBadge($("health"), false, "unreachable", String(e));
  }
}

refresh();
setInterval(refresh, 1000);
