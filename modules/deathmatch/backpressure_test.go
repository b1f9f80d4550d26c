package deathmatch

import (
	"slices"
	"testing"

	"github.com/sparkhost/sparkhost/host/match"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestBackloggedClientGetsFewerAcks: a client whose link the server
// reports backlogged (module.Link) gets an InputAck every ackThinning
// ticks, each carrying its latest input; a client beside it on a healthy
// link keeps one every tick.
func TestBackloggedClientGetsFewerAcks(t *testing.T) {
	h := newFakeHost(t, gamemsg.ModeDeathmatch, match.Config{Maps: []string{"arena"}})
	var got []msg
	h.onSend = func(to uint32, mt wire.MessageType, p []byte) { got = append(got, msg{to, mt, slices.Clone(p)}) }
	m := NewWith(Options{Seed: 1})
	if err := m.Load(h); err != nil {
		t.Fatal(err)
	}
	h.admit(m, 1, "slow")
	h.admit(m, 2, "fine")
	c := h.clients[1]
	c.Link = module.Link{Backlogged: true, SendRate: 20000}
	h.clients[1] = c
	step(h, m) // both spawn
	got = nil
	const ticks = 6 * linkCheckTicks
	seq := uint32(0)
	for range ticks {
		seq++
		for _, id := range []uint32{1, 2} {
			m.OnInput(h.clients[id], gamemsg.ClientInput{InputSeq: seq, MoveForward: 1, DT: 1.0 / 60})
		}
		step(h, m)
	}
	slow, fine := 0, 0
	var last gamemsg.InputAck
	for _, a := range of(got, gamemsg.TypeInputAck) {
		if a.to == 1 {
			slow++
			last, _ = gamemsg.ParseInputAck(a.payload)
		} else {
			fine++
		}
	}
	if fine != ticks {
		t.Errorf("the healthy client got %d acks in %d ticks; want one a tick", fine, ticks)
	}
	// The first linkCheckTicks ticks go by before the module looks.
	if want := linkCheckTicks + (ticks-linkCheckTicks)/ackThinning; slow < want-2 || slow > want+2 {
		t.Errorf("the backlogged client got %d acks in %d ticks; want about %d", slow, ticks, want)
	}
	if last.LastInputSeq < seq-ackThinning {
		t.Errorf("its last ack covers input %d of %d: the acks must carry the latest input", last.LastInputSeq, seq)
	}
}
