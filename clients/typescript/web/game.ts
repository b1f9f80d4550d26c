// The browser game page: a name, the lobby, a room, and tagarena (tag on a
// field, scripts/tagarena.lua) on a canvas, with the ping and the transport
// in use. It uses only the browser client (src/browser.ts).

import * as spark from "../src/browser";
import * as tagarena from "./generated/tagarena";
import {
  ARENA_NAMES_ID, ARENA_WORLD_ID, ArenaWorld, SCHEMAS, decodeArenaNames, decodeArenaWorld, sendArenaMove,
} from "./generated/tagarena";

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const MODE = "tagarena";

interface Player { id: number; name: string; bot: boolean; tags: number; x: number; y: number }

/** The page's state, readable by a person's console and by the browser tests. */
const game = {
  phase: "name" as "name" | "connecting" | "lobby" | "room",
  transport: "",
  fallback: "",
  ping: -1,
  me: 0,
  room: 0,
  it: 0,
  players: [] as Player[],
  rooms: [] as spark.RoomInfo[],
  log: [] as string[],
  client: undefined as spark.Client | undefined,
};
(window as unknown as { sparkGame: typeof game; sparkhost: typeof spark }).sparkGame = game;
(window as unknown as { sparkhost: typeof spark }).sparkhost = spark;
(window as unknown as { tagarena: typeof tagarena }).tagarena = tagarena;

const names = new Map<number, { name: string; bot: boolean }>();
// Where the player steers to; none until the mouse or a key says (the player stays where it came in).
let target: { x: number; y: number } | undefined;

function say(line: string): void {
  game.log.push(line);
  if (game.log.length > 50) game.log.shift();
  $("log").textContent = game.log.slice(-8).join("\n");
}

function show(phase: typeof game.phase): void {
  game.phase = phase;
  for (const p of ["name", "lobby", "room"]) $(p).hidden = p !== phase && !(p === "name" && phase === "connecting");
}

async function play(): Promise<void> {
  const name = ($("name-input") as HTMLInputElement).value.trim() || "player";
  show("connecting");
  say(`connecting as ${name}…`);
  const prefer = (new URLSearchParams(location.search).get("transport") ?? "auto") as "auto" | "webtransport" | "websocket";
  try {
    const conn = await spark.connectWeb({ name, schemas: SCHEMAS, prefer });
    game.client = conn.client;
    game.transport = conn.transport;
    game.fallback = conn.fallbackReason ?? "";
    game.me = conn.client.id;
    if (conn.fallbackReason) say(`WebTransport not used: ${conn.fallbackReason}`);
    say(`connected over ${conn.transport}, pin ${conn.client.serverPin}`);
    conn.client.onMessage = onMessage;
    conn.client.onClose = (c) => { say(`disconnected: ${c.reasonName} ${c.detail}`); game.transport = ""; show("name"); };
    show("lobby");
    conn.client.send(spark.RoomType.ListRequest, spark.Channel.ReliableOrdered, spark.roomListRequest(0));
  } catch (e) {
    say(`could not connect: ${(e as Error).message}`);
    show("name");
  }
}

function onMessage(m: spark.Message): void {
  switch (m.type) {
    case spark.RoomType.List: {
      const l = spark.parseRoomList(m.payload);
      game.rooms = l.rooms;
      renderRooms();
      break;
    }
    case spark.RoomType.Update: {
      // Applied in place: asking for the list again would spend the room request budget.
      const u = spark.parseRoomUpdate(m.payload);
      game.rooms = game.rooms.filter((r) => r.room !== u.info.room);
      if (!u.gone) game.rooms.push(u.info);
      game.rooms.sort((a, b) => a.room - b.room);
      renderRooms();
      break;
    }
    case spark.RoomType.Result: {
      const r = spark.parseRoomResult(m.payload);
      if (r.code !== 0) say(`room: ${r.detail}`);
      else if (r.request === spark.RoomType.Create || r.request === spark.RoomType.Join) {
        game.room = r.room;
        show("room");
        say(`in room ${r.room}`);
      }
      break;
    }
    case spark.RoomType.Chat: {
      const c = spark.parseRoomChat(m.payload);
      say(`${c.senderName}: ${c.text}`);
      break;
    }
    case ARENA_NAMES_ID: {
      if (game.phase === "lobby") show("room"); // a server without rooms: the match is the room
      const n = decodeArenaNames(m.payload);
      names.clear();
      n.ids.forEach((id, i) => names.set(id, { name: n.names[i], bot: n.bots[i] === 1 }));
      break;
    }
    case ARENA_WORLD_ID:
      onWorld(decodeArenaWorld(m.payload));
      break;
  }
}

function onWorld(w: ArenaWorld): void {
  game.it = w.it;
  game.players = w.ids.map((id, i) => ({
    id, name: names.get(id)?.name ?? `#${id}`, bot: names.get(id)?.bot ?? false, tags: w.tags[i], x: w.xs[i], y: w.ys[i],
  }));
  const list = $("players");
  list.innerHTML = "";
  for (const p of game.players) {
    const li = document.createElement("li");
    li.textContent = `${p.name}${p.bot ? " (bot)" : ""}${p.id === game.me ? " (you)" : ""}${p.id === w.it ? " — IT" : ""}: ${p.tags} tags`;
    list.appendChild(li);
  }
}

function renderRooms(): void {
  const ul = $("rooms");
  ul.innerHTML = "";
  for (const r of game.rooms) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.textContent = "Join";
    b.onclick = () => join(r);
    li.textContent = `${r.name} (${r.mode}) ${r.players}/${r.capacity}${r.password ? " 🔒" : ""} `;
    li.appendChild(b);
    ul.appendChild(li);
  }
}

async function join(r: spark.RoomInfo): Promise<void> {
  const c = game.client;
  if (!c) return;
  const password = r.password ? prompt("Password") ?? "" : undefined;
  c.send(spark.RoomType.Join, spark.Channel.ReliableOrdered, await spark.roomJoin(r.room, c.th, password, r));
}

async function create(): Promise<void> {
  const c = game.client;
  if (!c) return;
  const name = ($("room-name") as HTMLInputElement).value.trim() || "arena";
  const pw = ($("room-password") as HTMLInputElement).value;
  c.send(spark.RoomType.Create, spark.Channel.ReliableOrdered, await spark.roomCreate(name, MODE, 0, pw || undefined));
}

function draw(): void {
  const cv = $("field") as HTMLCanvasElement;
  const g = cv.getContext("2d")!;
  const s = cv.width / 1000;
  g.fillStyle = "#16321c";
  g.fillRect(0, 0, cv.width, cv.height);
  g.strokeStyle = "#2f6b3a";
  for (let i = 0; i <= 1000; i += 100) {
    g.beginPath(); g.moveTo(i * s, 0); g.lineTo(i * s, cv.height); g.moveTo(0, i * s); g.lineTo(cv.width, i * s); g.stroke();
  }
  for (const p of game.players) {
    g.fillStyle = p.id === game.it ? "#e53935" : p.id === game.me ? "#42a5f5" : p.bot ? "#bdbdbd" : "#ffca28";
    g.beginPath(); g.arc(p.x * s, p.y * s, 12, 0, 2 * Math.PI); g.fill();
    g.fillStyle = "#fff";
    g.font = "12px sans-serif";
    g.fillText(p.name, p.x * s + 14, p.y * s + 4);
  }
  const c = game.client;
  if (c) game.ping = c.stats.pingMs;
  $("status").textContent = game.transport ? `${game.transport} · ping ${game.ping < 0 ? "…" : game.ping + " ms"}` : "offline";
  requestAnimationFrame(draw);
}

function steer(): void {
  const c = game.client;
  if (!c || game.phase !== "room" || !target) return;
  const from = game.players.find((p) => p.id === game.me);
  if (!from) return;
  const dx = target.x - from.x, dy = target.y - from.y;
  const d = Math.hypot(dx, dy);
  const step = Math.min(d, 15);
  const x = d > 0 ? from.x + (dx / d) * step : from.x, y = d > 0 ? from.y + (dy / d) * step : from.y;
  try {
    sendArenaMove(c, { x: Math.round(x), y: Math.round(y) });
  } catch {
    // closed meanwhile
  }
}

function setup(): void {
  $("play").onclick = () => void play();
  $("create").onclick = () => void create();
  $("chat-send").onclick = () => {
    const t = ($("chat-input") as HTMLInputElement).value.trim();
    if (!t || !game.client) return;
    game.client.send(spark.RoomType.Chat, spark.Channel.Reliable, spark.roomChat(0, t));
    say(`me: ${t}`);
    ($("chat-input") as HTMLInputElement).value = "";
  };
  const cv = $("field") as HTMLCanvasElement;
  cv.onmousemove = (e) => {
    const r = cv.getBoundingClientRect();
    target = { x: ((e.clientX - r.left) / r.width) * 1000, y: ((e.clientY - r.top) / r.height) * 1000 };
  };
  window.addEventListener("keydown", (e) => {
    const k: { [key: string]: [number, number] } = { ArrowUp: [0, -60], ArrowDown: [0, 60], ArrowLeft: [-60, 0], ArrowRight: [60, 0] };
    const v = k[e.key];
    const me = game.players.find((p) => p.id === game.me);
    if (v && me) target = { x: me.x + v[0], y: me.y + v[1] };
  });
  setInterval(steer, 50);
  show("name");
  requestAnimationFrame(draw);
}

setup();
