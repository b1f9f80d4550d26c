package wire_test

import (
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestInProtocol: protocol v3 carries exactly the types of its frozen §4
// table (1..18) and module types; every other built-in type is v4's.
func TestInProtocol(t *testing.T) {
	for typ := range wire.MessageType(2000) {
		v3 := typ >= 1 && typ <= gamemsg.TypeScoreUpdate || typ >= wire.FirstUserDefined
		if got := wire.InProtocol(3, typ); got != v3 {
			t.Errorf("InProtocol(3, %d) = %v", typ, got)
		}
		if got := wire.InProtocol(4, typ); got != (typ != 0) {
			t.Errorf("InProtocol(4, %d) = %v", typ, got)
		}
	}
	for _, typ := range []wire.MessageType{wire.TypeCookieReply, wire.TypeMessageRefused, wire.TypeModuleSchemas,
		gamemsg.TypeRoomListRequest, gamemsg.TypeRoomState, gamemsg.TypeRoomEvent, gamemsg.TypeRoomUpdate} {
		if wire.IntroducedIn(typ) != 4 || wire.InProtocol(3, typ) {
			t.Errorf("%s (%d): introduced in v%d", typ, typ, wire.IntroducedIn(typ))
		}
	}
	for _, s := range gamemsg.Schemas() {
		if s.ID <= gamemsg.TypeScoreUpdate && wire.IntroducedIn(s.ID) != 3 {
			t.Errorf("%s is in v3's table", s.Name)
		}
	}
}
