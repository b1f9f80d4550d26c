package mmo_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// TestOldProtocolClientSeesTheWorld: a client written against mmo protocol
// 1 (its LoginStart states no protocol, it knows Appear, Positions and
// Disappear and nothing of WorldUpdate) logs in and sees the other
// characters; a client of protocol 2 on the same server gets WorldUpdate;
// a client stating a protocol the server does not serve is refused
// ProtocolUnsupported, with a detail that says what the server serves.
func TestOldProtocolClientSeesTheWorld(t *testing.T) {
	srv := startServer(t, t.TempDir(), nil)
	old := dial(t, srv, "old")
	old.s.Protocol = 1
	newer := dial(t, srv, "newer")

	for _, p := range []struct {
		pl              *player
		account, person string
	}{{old, "oldie", "Oldie"}, {newer, "newbie", "Newbie"}} {
		_, err := p.pl.s.Register(bg, p.account, "pw-"+p.account)
		must(t, err)
		_, err = p.pl.s.Login(bg, p.account, "pw-"+p.account)
		must(t, err)
		must(t, p.pl.s.Create(bg, p.person))
		_, err = p.pl.s.Enter(bg, p.person)
		must(t, err)
	}
	old.waitEvent(t, "mmo Newbie appeared")
	newer.waitEvent(t, "mmo Oldie appeared")
	must(t, newer.s.Move(bg, 1, 0))
	old.waitEvent(t, "mmo Newbie moving from")
	trio := old.received(mmoproto.TypeAppear) + old.received(mmoproto.TypePositions) + old.received(mmoproto.TypeDisappear)
	if n := old.received(mmoproto.TypeWorldUpdate); n != 0 || trio == 0 {
		t.Fatalf("the protocol 1 client got %d WorldUpdates and %d Appear/Positions/Disappear", n, trio)
	}
	if newer.received(mmoproto.TypeWorldUpdate) == 0 || newer.received(mmoproto.TypeAppear) != 0 {
		t.Fatalf("the protocol 2 client got %d WorldUpdates, %d Appears", newer.received(mmoproto.TypeWorldUpdate), newer.received(mmoproto.TypeAppear))
	}
	if tbl, ok := newer.c.ModuleProtocols(); !ok || !slices.Contains(tbl.Modules, wire.ModuleProtocol{Module: "mmo", Protocol: 2, Oldest: 1}) {
		t.Fatalf("the server announced %+v (ok %v): no mmo 1..2", tbl, ok)
	}

	future := dial(t, srv, "future")
	future.s.Protocol = 9
	_, err := future.s.Register(bg, "future", "pw-future")
	must(t, err)
	_, err = future.s.Login(bg, "future", "pw-future")
	if code(err) != mmoproto.ProtocolUnsupported || !strings.Contains(err.Error(), "client speaks mmo protocol 9, this server serves 1..2") {
		t.Fatalf("login speaking protocol 9: %v", err)
	}
}
