// connectWeb: a browser's way to a server: the connect facts of /web.json,
// then WebTransport (with the published certificate hashes), falling back to
// WebSocket, then the v4 handshake with the pin.

import { Client, ClientOptions } from "../client";
import { Transport } from "../platform";
import { openWebSocket, openWebTransport } from "./transport";

/** What /web.json tells (docs/protocol.md §14.1). */
export interface WebInfo {
  pin: string;
  name?: string;
  port: number;
  webtransport?: { path: string; cert_hashes: { algorithm: string; value: string; hex?: string; not_after?: string }[] };
  websocket?: { path: string; tls: boolean };
}

export interface ConnectWebOptions extends Omit<ClientOptions, "host" | "port" | "pin" | "transport"> {
  /** The server's web origin, "http://HOST:PORT" (default: the page's own). */
  base?: string;
  /** The pin; default: /web.json's (trust on first use: as trustworthy as the page). */
  pin?: string;
  /** Which transport to use: "auto" (WebTransport, then WebSocket; the default), "webtransport" or "websocket". */
  prefer?: "auto" | "webtransport" | "websocket";
  /** How long WebTransport may take to open before the fallback, ms (default 3000). */
  webTransportTimeoutMs?: number;
}

/** A connected client and how it got there. */
export interface WebConnection {
  client: Client;
  /** "webtransport" or "websocket". */
  transport: string;
  /** The transport itself; closing it ends the session without a Disconnect (the server sees the session end). */
  link: Transport;
  info: WebInfo;
  /** Why WebTransport was not used, when the fallback was taken. */
  fallbackReason?: string;
}

/** Fetches and checks /web.json from base. */
export async function fetchWebInfo(base: string): Promise<WebInfo> {
  const r = await fetch(new URL("/web.json", base).toString(), { cache: "no-store" });
  if (!r.ok) throw new Error(`/web.json: HTTP ${r.status}`);
  const info = (await r.json()) as WebInfo;
  if (typeof info.pin !== "string" || !Number.isInteger(info.port)) throw new Error("/web.json: no pin or port");
  return info;
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    p.then((v) => { clearTimeout(t); resolve(v); }, (e) => { clearTimeout(t); reject(e); });
  });
}

/** Connects to the server at base: WebTransport when the browser and server have it, else WebSocket. */
export async function connectWeb(opts: ConnectWebOptions): Promise<WebConnection> {
  const base = opts.base ?? location.origin;
  const info = await fetchWebInfo(base);
  const host = new URL(base).hostname;
  const hostPort = (host.includes(":") ? `[${host}]` : host) + ":" + info.port;
  const prefer = opts.prefer ?? "auto";
  const pin = opts.pin ?? info.pin;
  const clientOpts = (transport: Transport): ClientOptions => ({ ...opts, host, port: info.port, pin, transport: () => Promise.resolve(transport) });
  let fallbackReason: string | undefined;
  if (prefer !== "websocket") {
    if (!info.webtransport) fallbackReason = "the server does not serve WebTransport";
    else if (typeof WebTransport === "undefined") {
      fallbackReason = globalThis.isSecureContext === false
        ? "no WebTransport in this page: browsers give it to secure contexts only (https://, or http://localhost)"
        : "this browser has no WebTransport";
    }
    else {
      // Only a WebTransport that does not open falls back; a handshake
      // that fails over it (a wrong pin, a refusal) fails as it is.
      let t: Transport | undefined;
      try {
        const hashes = info.webtransport.cert_hashes.filter((h) => h.algorithm === "sha-256").map((h) => fromBase64(h.value));
        const opening = openWebTransport(`https://${hostPort}${info.webtransport.path}`, hashes);
        try {
          t = await withTimeout(opening, opts.webTransportTimeoutMs ?? 3000, "WebTransport");
        } catch (e) {
          opening.then((late) => late.close(), () => {}); // one that opens after the fallback is closed
          throw e;
        }
      } catch (e) {
        fallbackReason = `WebTransport: ${(e as Error).message ?? e}`;
      }
      if (t) {
        const client = await Client.connect(clientOpts(t));
        return { client, transport: t.kind, link: t, info };
      }
    }
    if (prefer === "webtransport") throw new Error(fallbackReason);
  }
  if (!info.websocket) throw new Error(`the server does not serve WebSocket${fallbackReason ? "; " + fallbackReason : ""}`);
  const scheme = info.websocket.tls ? "wss" : "ws";
  const t = await openWebSocket(`${scheme}://${hostPort}${info.websocket.path}`);
  const client = await Client.connect(clientOpts(t));
  return { client, transport: t.kind, link: t, info, fallbackReason };
}
