package wire

import "testing"

// TestDrainingReasons: the drain's reason codes are the spec's numbers
// (docs/protocol.md §3.11, §6, §3.14), and a v3 session never gets the
// Disconnect one (it is above the v3 range).
func TestDrainingReasons(t *testing.T) {
	if RejectServerDraining != 11 || DisconnectServerDraining != 16 {
		t.Fatalf("ServerDraining: reject %d, disconnect %d; the spec says 11 and 16", RejectServerDraining, DisconnectServerDraining)
	}
	if RejectServerDraining.String() != "ServerDraining" || DisconnectServerDraining.String() != "ServerDraining" {
		t.Fatalf("names %q %q", RejectServerDraining, DisconnectServerDraining)
	}
	if DisconnectServerDraining <= LastV3DisconnectReason {
		t.Fatal("ServerDraining is within the v3 range")
	}
	// The codes after them stay unnamed (the indexed names leave no
	// empty string behind them).
	if got := RejectReason(12).String(); got != "RejectReason(12)" {
		t.Errorf("12: %q", got)
	}
	if got := DisconnectReason(17).String(); got != "DisconnectReason(17)" {
		t.Errorf("17: %q", got)
	}
}
