// The browser's transports (docs/protocol.md §14): WebTransport, with the
// certificate hashes of /web.json and the overflow stream for datagrams
// larger than the session's datagram maximum, and WebSocket, one binary
// message per datagram.

import { Transport } from "../platform";

/** The largest datagram a frame carries (§14.2). */
const MAX_FRAME = 65507;

/** The hooks a transport calls; set before the first datagram arrives. */
class Hooks {
  datagram: (d: Uint8Array) => void = () => {};
  error: (e: Error) => void = () => {};
  private failed = false;
  fail(e: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.error(e);
  }
}

/**
 * Opens a WebTransport session to url (https://HOST:PORT/wt). certHashes
 * are the SHA-256 hashes of the server's self-signed certificates (every
 * hash /web.json lists); empty: the browser checks the certificate against
 * its roots.
 */
export async function openWebTransport(url: string, certHashes: Uint8Array[]): Promise<Transport> {
  const options: WebTransportOptions = {};
  if (certHashes.length > 0) options.serverCertificateHashes = certHashes.map((value) => ({ algorithm: "sha-256", value: value as BufferSource }));
  const wt = new WebTransport(url, options);
  wt.closed.catch(() => {}); // a session that never opens rejects both; ready reports it
  try {
    await wt.ready;
  } catch (e) {
    wt.close();
    throw e;
  }
  const hooks = new Hooks();
  const writer = wt.datagrams.writable.getWriter();
  let overflow: Promise<WritableStreamDefaultWriter<Uint8Array>> | undefined;
  let closed = false;
  wt.closed.then(
    (info) => hooks.fail(new Error(`WebTransport closed (${info.closeCode ?? 0}: ${info.reason ?? ""})`)),
    (e) => hooks.fail(new Error(`WebTransport failed: ${e}`)),
  );
  readDatagrams(wt, hooks);
  readOverflow(wt, hooks);
  return {
    kind: "webtransport",
    maxDatagram: wt.datagrams.maxDatagramSize,
    send(d: Uint8Array, done?: () => void): void {
      if (closed) return done?.();
      if (d.length <= wt.datagrams.maxDatagramSize) {
        writer.write(d).then(() => done?.(), () => done?.());
        return;
      }
      // Larger than a datagram now: a frame on the overflow stream (§14.2).
      if (!overflow) overflow = wt.createUnidirectionalStream().then((s) => s.getWriter());
      const frame = new Uint8Array(2 + d.length);
      frame[0] = d.length >> 8;
      frame[1] = d.length & 0xff;
      frame.set(d, 2);
      overflow.then((w) => w.write(frame)).then(() => done?.(), (e) => { done?.(); hooks.fail(new Error(`overflow stream: ${e}`)); });
    },
    onDatagram: (fn) => { hooks.datagram = fn; },
    onError: (fn) => { hooks.error = fn; },
    close(): void {
      if (closed) return;
      closed = true;
      // Let the writes queued before close (the Disconnect) leave first.
      writer.ready.then(() => wt.close()).catch(() => {});
    },
  };
}

async function readDatagrams(wt: WebTransport, hooks: Hooks): Promise<void> {
  const reader = wt.datagrams.readable.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      hooks.datagram(value as Uint8Array);
    }
  } catch {
    // The session ended: wt.closed reports it.
  }
}

/** Reads the server's overflow streams: frames of a 2-byte big-endian length and a datagram. */
async function readOverflow(wt: WebTransport, hooks: Hooks): Promise<void> {
  const streams = wt.incomingUnidirectionalStreams.getReader();
  try {
    for (;;) {
      const { value, done } = await streams.read();
      if (done) return;
      readFrames(value as ReadableStream<Uint8Array>, hooks);
    }
  } catch {
    // The session ended.
  }
}

/**
 * Splits an overflow stream into its frames (§14.2): a 2-byte big-endian
 * length L (1..65,507) and L bytes of datagram. push takes the stream's
 * chunks as they come and returns the whole datagrams; it throws on a frame
 * length of 0 or over 65,507. end throws when the stream ended inside a
 * frame. It holds at most one frame's bytes.
 */
export class FrameReader {
  private buf = new Uint8Array(0);

  push(chunk: Uint8Array): Uint8Array[] {
    const next = new Uint8Array(this.buf.length + chunk.length);
    next.set(this.buf, 0);
    next.set(chunk, this.buf.length);
    let b = next;
    const out: Uint8Array[] = [];
    while (b.length >= 2) {
      const n = (b[0] << 8) | b[1];
      if (n === 0 || n > MAX_FRAME) throw new Error(`overflow frame of ${n} bytes`);
      if (b.length < 2 + n) break;
      out.push(b.slice(2, 2 + n));
      b = b.subarray(2 + n);
    }
    this.buf = b.slice();
    return out;
  }

  end(): void {
    if (this.buf.length > 0) throw new Error("overflow stream ended inside a frame");
  }
}

async function readFrames(stream: ReadableStream<Uint8Array>, hooks: Hooks): Promise<void> {
  const reader = stream.getReader();
  const frames = new FrameReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        frames.end();
        return;
      }
      for (const d of frames.push(value)) hooks.datagram(d);
    }
  } catch (e) {
    // A bad frame ends the session (§14.2); a stream the session's end cut
    // short is reported by wt.closed.
    if (e instanceof Error && e.message.startsWith("overflow")) hooks.fail(e);
  }
}

/** Opens a WebSocket session to url (ws://HOST:PORT/ws) with the "sparkhost.v4" subprotocol. */
export function openWebSocket(url: string): Promise<Transport> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ["sparkhost.v4"]);
    ws.binaryType = "arraybuffer";
    const hooks = new Hooks();
    let open = false;
    ws.onopen = () => {
      open = true;
      resolve({
        kind: "websocket",
        send(d: Uint8Array, done?: () => void): void {
          if (ws.readyState === WebSocket.OPEN) ws.send(d as Uint8Array<ArrayBuffer>);
          done?.();
        },
        onDatagram: (fn) => { hooks.datagram = fn; },
        onError: (fn) => { hooks.error = fn; },
        close: () => ws.close(1000),
      });
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (ev.data instanceof ArrayBuffer) hooks.datagram(new Uint8Array(ev.data));
    };
    ws.onerror = () => {
      if (!open) reject(new Error(`WebSocket to ${url} failed`));
    };
    ws.onclose = (ev: CloseEvent) => {
      if (!open) reject(new Error(`WebSocket to ${url} closed (${ev.code})`));
      else hooks.fail(new Error(`WebSocket closed (${ev.code} ${ev.reason})`));
    };
  });
}
