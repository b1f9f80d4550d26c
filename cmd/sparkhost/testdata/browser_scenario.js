// The browser client's scenario, run in the game page by
// TestBrowserClient: __PREFER__ is the transport asked for ("auto",
// "webtransport" or "websocket"), __EXPECT__ the one expected, __PIN__ the
// server's pin from its console. Resolves with what happened; the Go test
// checks it. Every wait is bounded.
(async () => {
  const S = window.sparkhost, T = window.tagarena;
  const out = { steps: [] };
  const step = (s) => out.steps.push(s);
  const RO = S.Channel.ReliableOrdered;
  const result = (c, req) => c.waitFor((m) => m.type === S.RoomType.Result && S.parseRoomResult(m.payload).request === req, 10000).then((m) => S.parseRoomResult(m.payload));
  const connect = (name) => S.connectWeb({ name, pin: __PIN__, prefer: __PREFER__, schemas: T.SCHEMAS, webTransportTimeoutMs: 8000 });
  try {
    const a = await connect("alice");
    const b = await connect("bob");
    out.transports = [a.transport, b.transport];
    out.pins = [a.client.serverPin, b.client.serverPin];
    out.crypto = S.cryptoOf().name;
    out.maxDatagram = a.link.maxDatagram ?? 0;
    out.handshakeCrypto = a.client.handshakeCrypto;
    out.fallback = a.fallbackReason || "";
    out.secure = window.isSecureContext;
    // Another pin: the handshake gives up (the browser trusts the pin, not the Web PKI).
    const wrongPin = __PIN__.slice(0, -2) + (__PIN__.endsWith("AA") ? "BA" : "AA");
    try {
      const w = await S.connectWeb({ name: "mallory", pin: wrongPin, prefer: __PREFER__, webTransportTimeoutMs: 8000 });
      out.wrongPin = "admitted";
      await w.client.close();
    } catch (e) {
      out.wrongPin = e.reason || String(e);
    }
    step("handshake");

    // Chat: a global RoomChat from the lobby reaches bob.
    const heard = b.client.waitFor((m) => m.type === S.RoomType.Chat && S.parseRoomChat(m.payload).text === "hello from alice", 10000);
    a.client.send(S.RoomType.Chat, S.Channel.Reliable, S.roomChat(1, "hello from alice"));
    const line = S.parseRoomChat((await heard).payload);
    out.chat = line.senderName + ": " + line.text;
    step("chat");

    // Rooms: alice creates a room with a password; bob lists it, is refused
    // with a wrong password and joins with the right one.
    const created = result(a.client, S.RoomType.Create);
    a.client.send(S.RoomType.Create, RO, await S.roomCreate("secret", "tagarena", 0, "hunter2"));
    const cr = await created;
    out.createCode = cr.code;
    const room = cr.room;
    const listed = b.client.waitFor((m) => m.type === S.RoomType.List, 10000);
    b.client.send(S.RoomType.ListRequest, RO, S.roomListRequest(0));
    const info = S.parseRoomList((await listed).payload).rooms.find((r) => r.room === room);
    out.listedWithPassword = !!(info && info.password);
    let joined = result(b.client, S.RoomType.Join);
    b.client.send(S.RoomType.Join, RO, await S.roomJoin(room, b.client.th, "wrong", info));
    out.wrongPasswordCode = (await joined).code;
    const named = b.client.waitFor((m) => m.type === T.ARENA_NAMES_ID && T.decodeArenaNames(m.payload).ids.includes(b.client.id), 10000);
    joined = result(b.client, S.RoomType.Join);
    b.client.send(S.RoomType.Join, RO, await S.roomJoin(room, b.client.th, "hunter2", info));
    out.joinCode = (await joined).code;
    const names = T.decodeArenaNames((await named).payload);
    out.names = names.names;
    step("rooms");

    // A module message larger than a datagram: fragmented both ways.
    const big = new Uint8Array(3000).map((_, i) => (i * 7) & 0xff);
    const echoed = b.client.waitFor((m) => m.type === T.ARENA_ECHOED_ID, 10000);
    T.sendArenaEcho(b.client, { data: big });
    const back = T.decodeArenaEchoed((await echoed).payload).data;
    out.fragmentEchoed = back.length === big.length && back.every((v, i) => v === big[i]);
    step("module message");

    // Over WebTransport, datagrams larger than the browser's
    // maxDatagramSize take the overflow stream (§14.3): carol packs into
    // 1,400-byte datagrams over a link that does not tell its maximum.
    if (__EXPECT__ === "webtransport") {
      const hashes = a.info.webtransport.cert_hashes.map((h) => Uint8Array.from(atob(h.value), (c) => c.charCodeAt(0)));
      const link = await S.openWebTransport(`https://127.0.0.1:${a.info.port}/wt`, hashes);
      const wide = { kind: link.kind, send: link.send, onDatagram: link.onDatagram, onError: link.onError, close: link.close };
      const carol = await S.Client.connect({ host: "127.0.0.1", port: a.info.port, name: "carol", pin: __PIN__, schemas: T.SCHEMAS, datagramSize: 1400, transport: () => Promise.resolve(wide) });
      const cj = result(carol, S.RoomType.Join);
      carol.send(S.RoomType.Join, RO, await S.roomJoin(room, carol.th, "hunter2", info));
      await cj;
      const ce = carol.waitFor((m) => m.type === T.ARENA_ECHOED_ID, 10000);
      T.sendArenaEcho(carol, { data: big });
      const cb = T.decodeArenaEchoed((await ce).payload).data;
      out.overflowEchoed = cb.length === big.length && cb.every((v, i) => v === big[i]);
      await carol.close("done");
      step("overflow stream");
    }

    // Ten seconds of play: moves every 20 ms (unreliable) and a small
    // echo every 100 ms (reliable), packed together; the world arrives
    // ten times a second.
    let worlds = 0, echoes = 0;
    const prev = b.client.onMessage;
    b.client.onMessage = (m) => {
      if (m.type === T.ARENA_WORLD_ID) worlds++;
      if (m.type === T.ARENA_ECHOED_ID) echoes++;
    };
    const s0 = { ...b.client.stats };
    const t0 = performance.now();
    let sent = 0, i = 0;
    while (performance.now() - t0 < 10000) {
      T.sendArenaMove(b.client, { x: 500 + ((i * 13) % 300), y: 400 });
      if (i % 5 === 0) { T.sendArenaEcho(b.client, { data: new Uint8Array(40).fill(i & 0xff) }); sent++; }
      i++;
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 1500));
    b.client.onMessage = prev;
    const s1 = b.client.stats;
    out.session = {
      seconds: (performance.now() - t0) / 1000, worlds, echoesSent: sent, echoes,
      messagesSent: s1.messagesSent - s0.messagesSent, datagramsSent: s1.datagramsSent - s0.datagramsSent,
      datagramsReceived: s1.datagramsReceived - s0.datagramsReceived,
      securityDrops: s1.securityDrops, malformedDropped: s1.malformedDropped, pingMs: s1.pingMs,
    };
    step("session");

    // A forced close: alice's transport ends under her, no Disconnect. The
    // server drops her session (the room's names lose her) and she
    // reconnects as a new client that joins again.
    const oldId = a.client.id;
    const gone = b.client.waitFor((m) => m.type === T.ARENA_NAMES_ID && !T.decodeArenaNames(m.payload).ids.includes(oldId), 20000);
    a.link.close();
    const closed = await Promise.race([a.client.closed(), new Promise((r) => setTimeout(() => r(null), 10000))]);
    out.aliceClosed = closed ? closed.reasonName : "not closed";
    await gone;
    step("forced close");
    const a2 = await connect("alice");
    const rejoined = result(a2.client, S.RoomType.Join);
    a2.client.send(S.RoomType.Join, RO, await S.roomJoin(room, a2.client.th, "hunter2", info));
    out.rejoinCode = (await rejoined).code;
    out.reconnected = a2.client.id !== oldId && a2.transport === __EXPECT__;
    step("reconnect");
    await a2.client.close("done");
    await b.client.close("done");
  } catch (e) {
    out.error = String(e && e.stack || e);
  }
  return out;
})()
