package v3strict

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"
)

// receiveLocked handles one datagram from the server's endpoint.
func (c *Client) receiveLocked(d []byte, now time.Time) {
	switch {
	case len(d) > 0 && d[0] == classSealed:
		c.sealedLocked(d, now)
	case len(d) > 0 && d[0] == classPlain:
		// Only a repeat of the ConnectAccepted (a resent Connect crossed
		// it) may come now, byte for byte the same (§5.5).
		if !bytes.Equal(d, c.accepted) {
			c.violate("plain frame after the handshake that is not a repeat of the ConnectAccepted (% x…)", head(d))
		}
	default:
		c.violate("datagram of class %#x from the server (§2)", firstByte(d))
	}
}

func head(d []byte) []byte { return d[:min(len(d), 12)] }

// sealedLocked opens a sealed frame and applies §3's and §4's rules: what
// breaks them is a violation and is dropped — unacknowledged.
func (c *Client) sealedLocked(d []byte, now time.Time) {
	pkt, err := c.open.open(d, now)
	if errors.Is(err, errReplay) {
		c.stats.Replays++
		return
	}
	if err != nil {
		c.violate("sealed frame: %v", err)
		return
	}
	c.lastAuth = now
	h, payload, err := ParsePacket(pkt)
	switch {
	case err != nil:
		c.violate("%v", err)
		return
	case h.SenderID != 0:
		c.violate("%s with SenderID %d; a server's is always 0", TypeName(h.Type), h.SenderID)
		return
	case h.Sequence == 0:
		c.violate("%s with Sequence 0; both counters start at 1", TypeName(h.Type))
		return
	}
	if err := c.table.Check(ToClient, h, payload); err != nil {
		c.violate("sequence %d, ordered %d: %v", h.Sequence, h.Ordered, err)
		return
	}
	m := Message{Type: h.Type, Channel: h.Channel, Sequence: h.Sequence, Ordered: h.Ordered, Payload: bytes.Clone(payload)}
	if h.Channel == Unreliable {
		c.unreliableLocked(m, now)
		return
	}
	c.reliableLocked(m, now)
}

// reliableLocked acknowledges a reliable message and delivers what is due.
func (c *Client) reliableLocked(m Message, now time.Time) {
	v, due, err := c.in.arrive(m, now)
	if err != nil {
		c.violate("%v", err)
	}
	switch v {
	case tooFar:
		return // unacknowledged: the server sends it again
	case duplicate:
		c.stats.Duplicates++
	}
	for _, a := range c.in.acks(m.Sequence) {
		c.sendUnreliableLocked(TypeAck, AppendAck(nil, a), now)
	}
	for _, m := range due {
		c.deliverLocked(m)
	}
}

// deliverLocked checks what needs the state of the session (the entity
// types, the client id) and hands the message to the reader.
func (c *Client) deliverLocked(m Message) {
	if m.Channel == ReliableOrdered {
		c.stats.Ordered = m.Ordered
		if !c.sawSync && m.Type != TypeGameStateSync {
			c.violate("the first ordered message is %s, not GameStateSync (§5)", TypeName(m.Type))
		}
	}
	switch m.Type {
	case TypeGameStateSync:
		g, err := ParseGameStateSync(m.Payload)
		if err != nil {
			c.violate("GameStateSync: %v", err)
			return
		}
		if g.ClientID != c.id {
			c.violate("GameStateSync for client %d; this client is %d", g.ClientID, c.id)
		}
		c.sawSync, c.types = true, g.Types
	case TypeEntitySpawn:
		id, e, err := checkSpawn(c.types, m.Payload)
		if err != nil {
			c.violate("EntitySpawn: %v", err)
			return
		}
		c.entities[id] = e
	case TypeEntityDestroy:
		delete(c.entities, binary.LittleEndian.Uint32(m.Payload))
	}
	c.stats.Delivered[m.Type]++
	c.inbox = append(c.inbox, m)
	c.wake()
}

// unreliableLocked handles Ack, Heartbeat and Disconnect and delivers the rest.
func (c *Client) unreliableLocked(m Message, now time.Time) {
	p := m.Payload
	switch m.Type {
	case TypeAck:
		a, _ := ParseAck(p)
		if err := c.out.onAck(a); err != nil {
			c.violate("%v", err)
		}
		if p := c.out.packets[1]; p != nil && p.acked {
			c.admitOnce.Do(func() { close(c.admitted) })
		}
		return
	case TypeHeartbeat:
		c.heartbeatLocked(binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]), now)
		return
	case TypeDisconnect:
		r := reader{b: p}
		c.disc = &DisconnectedError{Reason: r.u8(), Detail: r.text("detail", 256)}
		c.wake()
		return
	case TypeEntityStateUpdate:
		e, ok := c.entities[binary.LittleEndian.Uint32(p)]
		if !ok {
			return // an update of an unknown entity is skipped (§9.3)
		}
		if err := checkUpdate(e, p); err != nil {
			c.violate("EntityStateUpdate of entity %d: %v", binary.LittleEndian.Uint32(p), err)
			return
		}
	}
	c.stats.Delivered[m.Type]++
	c.inbox = append(c.inbox, m)
	c.wake()
}

// heartbeatLocked answers a token at once and times an echo of ours.
func (c *Client) heartbeatLocked(token, echo uint32, now time.Time) {
	if token != 0 {
		c.stats.ServerHeartbeats++
		c.sendUnreliableLocked(TypeHeartbeat, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0), token), now)
	}
	if echo == 0 {
		return
	}
	sent, ok := c.tokens[echo]
	if !ok {
		c.violate("Heartbeat echoes token %#x, which this client never sent (or already had answered)", echo)
		return
	}
	delete(c.tokens, echo)
	c.stats.Echoes++
	c.stats.SlowestEcho = max(c.stats.SlowestEcho, now.Sub(sent))
}
