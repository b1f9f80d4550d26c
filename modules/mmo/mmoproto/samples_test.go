package mmoproto_test

import (
	"strings"

	mp "github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// sample is a message at the bottom (small) or top (large) of its size rule.
type sample struct {
	name  string
	msg   mp.Message
	bound string // "min" or "max": the encoding is exactly the schema's MinLen or MaxLen
}

func fill(b byte, n int) string { return strings.Repeat(string([]byte{b}), n) }

// samples returns, for every type, its smallest message and its largest (the
// same when the size is fixed).
func samples() []sample {
	name64 := fill('n', mp.MaxNameField)
	scram512 := fill('s', mp.MaxSCRAMField)
	detail := fill('d', mp.MaxDetailField)
	var key [mp.KeyLen]byte
	for i := range key {
		key[i] = byte(i)
	}
	chars := make([]mp.CharacterInfo, mp.MaxListedCharacters)
	for i := range chars {
		chars[i] = mp.CharacterInfo{Name: name64, X: float32(i), Y: 2}
	}
	nIDs := (wire.MaxPayload - 6) / 4
	ids := make([]uint32, nIDs)
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	nPos := (wire.MaxPayload - 6) / 12
	pos := make([]mp.Position, nPos)
	for i := range pos {
		pos[i] = mp.Position{ID: uint32(i + 1), X: 1.5, Y: -0}
	}
	apps := make([]mp.Appearance, 0, 1000)
	size := 6
	for size+14+mp.MaxNameField <= wire.MaxPayload {
		apps = append(apps, mp.Appearance{ID: uint32(len(apps) + 1), X: 3, Y: 4, Name: name64})
		size += 14 + mp.MaxNameField
	}
	return []sample{
		{"register", &mp.Register{RequestID: 1, Account: "", Iterations: 4096}, "min"},
		{"register", &mp.Register{RequestID: 0xFFFFFFFF, Account: name64, Salt: [16]byte{1, 2, 3}, Iterations: 600000, StoredKey: key, ServerKey: key}, "max"},
		{"register result", &mp.RegisterResult{RequestID: 2}, "min"},
		{"register result", &mp.RegisterResult{RequestID: 2, Account: name64}, "max"},
		{"login start", &mp.LoginStart{RequestID: 3}, "min"},
		{"login start", &mp.LoginStart{RequestID: 3, ClientFirst: scram512}, ""},
		{"login start with its protocol", &mp.LoginStart{RequestID: 3, ClientFirst: scram512, Protocol: mp.Protocol}, "max"},
		{"login challenge", &mp.LoginChallenge{RequestID: 4}, "min"},
		{"login challenge", &mp.LoginChallenge{RequestID: 4, ServerFirst: scram512}, "max"},
		{"login finish", &mp.LoginFinish{RequestID: 5}, "min"},
		{"login finish", &mp.LoginFinish{RequestID: 5, ClientFinal: scram512}, "max"},
		{"login result", &mp.LoginResult{RequestID: 6}, "min"},
		{"login result", &mp.LoginResult{RequestID: 6, Account: name64, ServerFinal: scram512}, "max"},
		{"logout", &mp.Logout{RequestID: 7}, "max"},
		{"logged out", &mp.LoggedOut{Reason: mp.LoggedOutElsewhere}, "min"},
		{"logged out", &mp.LoggedOut{Reason: 200, Detail: detail}, "max"},
		{"character list request", &mp.CharacterListRequest{RequestID: 8}, "max"},
		{"character list", &mp.CharacterList{RequestID: 9}, "min"},
		{"character list", &mp.CharacterList{RequestID: 9, Characters: chars}, "max"},
		{"character create", &mp.CharacterCreate{RequestID: 10}, "min"},
		{"character create", &mp.CharacterCreate{RequestID: 10, Name: name64}, "max"},
		{"character delete", &mp.CharacterDelete{RequestID: 11}, "min"},
		{"character delete", &mp.CharacterDelete{RequestID: 11, Name: name64}, "max"},
		{"enter", &mp.Enter{RequestID: 12}, "min"},
		{"enter", &mp.Enter{RequestID: 12, Name: name64}, "max"},
		{"entered", &mp.Entered{RequestID: 13, ID: 1}, "min"},
		{"entered", &mp.Entered{RequestID: 13, ID: 1, X: 1, Y: 2, Width: 1000, Height: 1000, Speed: 10, InterestRadius: 100, GreetRadius: 20, Name: name64}, "max"},
		{"leave", &mp.Leave{RequestID: 14}, "max"},
		{"move intent", &mp.MoveIntent{RequestID: 15, DX: -1, DY: 0.5}, "max"},
		{"stop", &mp.Stop{RequestID: 16}, "max"},
		{"where", &mp.Where{RequestID: 17}, "max"},
		{"where result", &mp.WhereResult{RequestID: 18, ID: 3, X: 500, Y: 250, DX: 0.6, DY: 0.8}, "max"},
		{"position upload", &mp.PositionUpload{RequestID: 19, X: 1, Y: 2}, "max"},
		{"appear", &mp.Appear{Tick: 20}, "min"},
		{"appear", &mp.Appear{Tick: 20, Entries: apps}, ""}, // as large as names of 64 bytes allow
		{"disappear", &mp.Disappear{Tick: 21}, "min"},
		{"disappear", &mp.Disappear{Tick: 21, IDs: ids}, "max"},
		{"positions", &mp.Positions{Tick: 22}, "min"},
		{"positions", &mp.Positions{Tick: 22, Entries: pos}, "max"},
		{"greet", &mp.Greet{RequestID: 23}, "min"},
		{"greet", &mp.Greet{RequestID: 23, Target: name64}, "max"},
		{"greeting", &mp.Greeting{FromID: 1, ToID: 2}, "min"},
		{"greeting", &mp.Greeting{FromID: 1, ToID: 2, FromName: name64, ToName: name64}, "max"},
		{"result", &mp.Result{RequestID: 24}, "min"},
		{"result", &mp.Result{RequestID: 24, Code: mp.Throttled, RetryAfterMS: 30000, Detail: detail}, "max"},
		{"handoff key", &mp.HandoffKey{RequestID: 7, Key: key}, "max"},
		{"handoff", &mp.Handoff{}, "min"},
		{"handoff", &mp.Handoff{Area: fill('a', mp.MaxAreaField), Addr: fill('1', mp.MaxAddrField), Pin: fill('p', mp.MaxPinField), Ticket: []byte(fill(9, mp.MaxTicketField))}, "max"},
		{"ticket result", &mp.TicketResult{Code: mp.TicketReplayed}, "min"},
		{"ticket result", &mp.TicketResult{Code: mp.OK, Account: name64, Detail: detail}, "max"},
		{"verifier upgrade", &mp.VerifierUpgrade{Iterations: 600000}, "max"},
		{"set verifier", &mp.SetVerifier{RequestID: 25, Salt: [16]byte{9}, Iterations: 600000, StoredKey: key, ServerKey: key}, "max"},
		{"world update", &mp.WorldUpdate{Tick: 26}, "min"},
		{"world update", &mp.WorldUpdate{Tick: 27, Appear: []mp.Appearance{{ID: 7, X: 1, Y: 2, Name: "Ann"}, {ID: 9, X: -3, Y: 4.5, Name: name64}},
			Positions: []mp.Position{{ID: 7, X: 1.25, Y: 2}, {ID: 3, X: 0, Y: -0}}, Disappear: []uint32{4, 5, 6}}, "two"},
		{"world update", &mp.WorldUpdate{Tick: 28, Positions: pos}, ""}, // as many positions as fit
	}
}
