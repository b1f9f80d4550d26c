package netstack

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/congestion"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// stateUpdate is an EntityStateUpdate of entity id whose one vec3 field is
// (x, 0, 0): structurally valid for the transport.
func stateUpdate(id uint32, x byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, id)
	b = binary.LittleEndian.AppendUint64(b, 1)
	return append(b, 0, 0, x, 0x3F, 0, 0, 0, 0, 0, 0, 0, 0)
}

// delivery records what a client session received, by type.
type delivery struct{ msgs map[wire.MessageType][][]byte }

func (d *delivery) fn(h *wire.Header, p []byte) {
	d.msgs[h.Type] = append(d.msgs[h.Type], bytes.Clone(p))
}

// exchange flushes srv at now and hands the datagrams to cli.
func exchange(t *testing.T, srv, cli *session, now time.Time, d *delivery) int {
	t.Helper()
	var b datagramBatch
	srv.flushLocked(now, &b)
	for _, sp := range b.spans {
		cli.receiveLocked(gamemsg.NewRegistry(), b.buf[sp.start:sp.end], now, d.fn, nil)
	}
	return len(b.spans)
}

// TestStateWaitsForThePacer: with the pacer in debt, a flush still sends
// what must flow — a reliable message and an unreliable one sent with
// Send (an InputAck) — and holds the state; a newer state of an entity
// that covers the queued one's fields replaces it in the queue, one that
// does not is queued beside it; once the pacer allows, the client gets the
// newest state of each once, in queue order.
func TestStateWaitsForThePacer(t *testing.T) {
	srv, cli := sessionPair(t)
	now := time.Now()
	srv.path.cc.pacer.Refill(now, congestion.DefaultInitialRate, 1200)
	srv.path.cc.pacer.Spend(1 << 20) // a debt of 16 s at the initial rate
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, 5, 0b11, stateUpdate(5, 1), now))
	must(srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, 6, 0b01, stateUpdate(6, 1), now))
	must(srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, 5, 0b11, stateUpdate(5, 2), now)) // replaces 5's
	must(srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, 6, 0b10, stateUpdate(6, 2), now)) // does not cover 6's
	must(srv.sendLocked(gamemsg.TypeInputAck, wire.Unreliable, make([]byte, 37), now))
	must(srv.sendLocked(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, []byte{9, 0, 0, 0}, now))

	d := &delivery{msgs: map[wire.MessageType][][]byte{}}
	now = now.Add(backlogAfter) // the state has waited long enough to count as a backlog
	exchange(t, srv, cli, now, d)
	if len(d.msgs[gamemsg.TypeInputAck]) != 1 || len(d.msgs[gamemsg.TypeEntityDestroy]) != 1 {
		t.Fatalf("in debt, the client got %d InputAcks and %d EntityDestroys; want both to flow", len(d.msgs[gamemsg.TypeInputAck]), len(d.msgs[gamemsg.TypeEntityDestroy]))
	}
	if n := len(d.msgs[gamemsg.TypeEntityStateUpdate]); n != 0 {
		t.Fatalf("in debt, %d state updates left; want them held", n)
	}
	st := srv.statsLocked()
	if !st.Backlogged || st.StateSuperseded != 1 || len(srv.path.cc.kq) != 3 {
		t.Fatalf("backlogged %v, superseded %d, queued %d; want true, 1, 3", st.Backlogged, st.StateSuperseded, len(srv.path.cc.kq))
	}
	if srv.out.queuedAt.IsZero() {
		t.Fatal("held state leaves no flush due: the service loop would never send it")
	}

	srv.path.cc.pacer = congestion.Pacer{} // the debt is paid
	later := now.Add(100 * time.Millisecond)
	exchange(t, srv, cli, later, d)
	got := d.msgs[gamemsg.TypeEntityStateUpdate]
	want := [][]byte{stateUpdate(5, 2), stateUpdate(6, 1), stateUpdate(6, 2)}
	if len(got) != len(want) {
		t.Fatalf("got %d state updates; want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("update %d: % x; want % x", i, got[i], want[i])
		}
	}
	if st := srv.statsLocked(); st.Backlogged || st.SendQueueDelay != 100*time.Millisecond+backlogAfter {
		t.Errorf("after sending: backlogged %v, send-queue delay %v; want false, %v", st.Backlogged, st.SendQueueDelay, 100*time.Millisecond+backlogAfter)
	}
	if len(srv.path.cc.kbuf) != 0 {
		t.Errorf("%d bytes of sent state kept", len(srv.path.cc.kbuf))
	}
}

// TestStaleStateIsDropped: state that waited for the pacer past a second
// is dropped and counted, not sent late.
func TestStaleStateIsDropped(t *testing.T) {
	srv, cli := sessionPair(t)
	now := time.Now()
	srv.path.cc.pacer.Refill(now, congestion.DefaultInitialRate, 1200)
	srv.path.cc.pacer.Spend(1 << 20)
	for id := range uint32(4) {
		if err := srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, uint64(id), 1, stateUpdate(id, 1), now); err != nil {
			t.Fatal(err)
		}
	}
	d := &delivery{msgs: map[wire.MessageType][][]byte{}}
	exchange(t, srv, cli, now.Add(500*time.Millisecond), d)
	srv.path.cc.pacer = congestion.Pacer{}
	exchange(t, srv, cli, now.Add(1500*time.Millisecond), d)
	if n := len(d.msgs[gamemsg.TypeEntityStateUpdate]); n != 0 {
		t.Errorf("%d stale updates sent", n)
	}
	if st := srv.statsLocked(); st.StateDropped != 4 || st.Backlogged {
		t.Errorf("dropped %d, backlogged %v; want 4, false", st.StateDropped, st.Backlogged)
	}
}

// TestClientSessionsDoNotPace: a client's session sends state as plain
// unreliable messages (no pacer, no markers).
func TestClientSessionsDoNotPace(t *testing.T) {
	srv, cli := sessionPair(t)
	now := time.Now()
	if cli.path.cc.on || !srv.path.cc.on {
		t.Fatalf("paced: client %v, server %v; want only the server's v4 session", cli.path.cc.on, srv.path.cc.on)
	}
	if err := cli.sendStateLocked(gamemsg.TypeEntityStateUpdate, 1, 1, stateUpdate(1, 1), now); err != nil {
		t.Fatal(err)
	}
	if len(cli.path.cc.kq) != 0 || len(cli.out.uq) == 0 {
		t.Fatal("a client's state went to the paced queue")
	}
}

// TestStatePathAllocatesNothing: a tick of state for 20 entities, an
// InputAck and a reliable message, paced, packed, received and acked,
// allocates nothing in steady state.
func TestStatePathAllocatesNothing(t *testing.T) {
	if RaceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	srv, cli := sessionPair(t)
	reg := gamemsg.NewRegistry()
	updates := make([][]byte, 20)
	for i := range updates {
		updates[i] = stateUpdate(uint32(i+1), byte(i))
	}
	ack := make([]byte, 37)
	var sb, cb datagramBatch
	deliver := func(*wire.Header, []byte) {}
	now := time.Now()
	step := func() {
		now = now.Add(50 * time.Millisecond)
		for i, u := range updates {
			if err := srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, uint64(i+1), 1, u, now); err != nil {
				t.Fatal(err)
			}
		}
		_ = srv.sendLocked(gamemsg.TypeInputAck, wire.Unreliable, ack, now)
		_ = srv.sendLocked(gamemsg.TypeEntityDestroy, wire.ReliableOrdered, []byte{9, 0, 0, 0}, now)
		srv.flushLocked(now, &sb)
		deliverBatch(cli, &sb, reg, now, deliver)
		cli.flushLocked(now.Add(20*time.Millisecond), &cb)
		deliverBatch(srv, &cb, reg, now.Add(20*time.Millisecond), deliver)
	}
	for range 100 {
		step()
	}
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Fatalf("%.1f allocations per tick", n)
	}
	if st := srv.ctr.snapshot(); st.StateDropped != 0 {
		t.Fatalf("%d states dropped on an unloaded path", st.StateDropped)
	}
}

// TestHeldStateSurvivesCompaction: state held over several flushes, some
// of it replaced by longer payloads (which sit after later ones in the
// queue's buffer), reaches the client intact once the pacer allows.
func TestHeldStateSurvivesCompaction(t *testing.T) {
	srv, cli := sessionPair(t)
	now := time.Now()
	srv.path.cc.pacer.Refill(now, congestion.DefaultInitialRate, 1200)
	srv.path.cc.pacer.Spend(1 << 20)
	long := func(id uint32, x byte) []byte { // the update with a second field: 12 bytes longer
		b := stateUpdate(id, x)
		binary.LittleEndian.PutUint64(b[4:], 3)
		return append(b, 0, 0, x, 0x40, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	d := &delivery{msgs: map[wire.MessageType][][]byte{}}
	var want [][]byte
	for id := uint32(1); id <= 3; id++ {
		if err := srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, uint64(id), 1, stateUpdate(id, 1), now); err != nil {
			t.Fatal(err)
		}
	}
	exchange(t, srv, cli, now.Add(10*time.Millisecond), d) // held: compacted once
	if err := srv.sendStateLocked(gamemsg.TypeEntityStateUpdate, 1, 3, long(1, 2), now); err != nil {
		t.Fatal(err)
	}
	exchange(t, srv, cli, now.Add(20*time.Millisecond), d) // held again: compacted with 1's newer, longer payload
	want = append(want, long(1, 2), stateUpdate(2, 1), stateUpdate(3, 1))
	srv.path.cc.pacer = congestion.Pacer{}
	exchange(t, srv, cli, now.Add(30*time.Millisecond), d)
	got := d.msgs[gamemsg.TypeEntityStateUpdate]
	if len(got) != len(want) {
		t.Fatalf("got %d updates; want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("update %d: % x; want % x", i, got[i], want[i])
		}
	}
}

// TestMovedSessionsEstimate: a move to another address starts the
// estimates afresh (a new path); a NAT rebinding — the same address, a
// new port — keeps them (the same path).
func TestMovedSessionsEstimate(t *testing.T) {
	srv, _ := sessionPair(t)
	now := time.Now()
	srv.path.cc.est.RTT(80*time.Millisecond, now)
	old := srv.path.addr
	srv.path.addr = netip.AddrPortFrom(old.Addr(), old.Port()+1)
	srv.ccMovedLocked(old)
	if srv.path.cc.est.SRTT() != 80*time.Millisecond {
		t.Fatalf("a new port reset the estimate (srtt %v)", srv.path.cc.est.SRTT())
	}
	old = srv.path.addr
	srv.path.addr = netip.MustParseAddrPort("127.0.0.9:5000")
	srv.ccMovedLocked(old)
	if srv.path.cc.est.SRTT() != 0 {
		t.Fatalf("a new address kept the old path's estimate (srtt %v)", srv.path.cc.est.SRTT())
	}
}
