package mmoproto_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"runtime"
	"testing"

	mp "github.com/sparkhost/sparkhost/modules/mmo/mmoproto"
	"github.com/sparkhost/sparkhost/modules/mmo/scram"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func registry(t testing.TB) *wire.Registry {
	t.Helper()
	r := gamemsg.NewRegistry()
	if err := mp.RegisterAll(r, mp.Owner); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSchemaTable(t *testing.T) {
	all := mp.Schemas()
	if len(all) != int(mp.LastType-mp.FirstType)+1 {
		t.Fatalf("%d schemas for %d types", len(all), mp.LastType-mp.FirstType+1)
	}
	names := map[string]bool{}
	for i, s := range all {
		if s.ID != mp.FirstType+wire.MessageType(i) {
			t.Errorf("schema %d has id %d", i, s.ID)
		}
		if names[s.Name] {
			t.Errorf("duplicate name %q", s.Name)
		}
		names[s.Name] = true
		if s.Channel != wire.ReliableOrdered || !s.RequiresAdmitted {
			t.Errorf("%s: channel %v, requires admitted %v", s.Name, s.Channel, s.RequiresAdmitted)
		}
		if got, _ := mp.SchemaOf(s.ID); !got.Equal(s) || mp.Name(s.ID) != s.Name {
			t.Errorf("%s: SchemaOf/Name disagree", s.Name)
		}
	}
	r := registry(t)
	if err := mp.RegisterAll(r, "other"); !errors.Is(err, wire.ErrTypeTaken) {
		t.Fatalf("second registration: %v", err)
	}
	if _, owner, ok := r.Lookup(mp.TypeRegister); !ok || owner != mp.Owner {
		t.Fatal("a failed RegisterAll removed the first owner's types")
	}
	if _, _, ok := r.Lookup(mp.TypeResult); !ok {
		t.Fatal("Result not registered")
	}
	if mp.Name(13) != "ChatMessage" || mp.IsRequest(mp.TypeResult) || !mp.IsRequest(mp.TypeGreet) {
		t.Fatal("Name/IsRequest")
	}
	// The bounds agree with the scram package's.
	if mp.MaxSCRAMField != scram.MaxMessageLen || mp.SaltLen != scram.SaltLen || mp.KeyLen != scram.KeyLen {
		t.Fatal("field bounds differ from package scram's")
	}
}

func direction(t wire.MessageType) wire.Direction {
	s, _ := mp.SchemaOf(t)
	return s.Direction
}

func TestRoundTripAndSchemaBounds(t *testing.T) {
	r := registry(t)
	seen := map[wire.MessageType]bool{}
	for _, s := range samples() {
		typ := s.msg.Type()
		seen[typ] = true
		p := s.msg.Append(nil)
		schema, _ := mp.SchemaOf(typ)
		if s.bound == "max" && len(p) != int(schema.MaxLen) || s.bound == "min" && len(p) != int(schema.MinLen) {
			t.Errorf("%s: %d bytes, schema %d..%d, sample is the %s", s.name, len(p), schema.MinLen, schema.MaxLen, s.bound)
		}
		if err := r.Validate(direction(typ), &wire.Header{Type: typ, Channel: wire.ReliableOrdered}, p); err != nil {
			t.Errorf("%s: the schema refuses it: %v", s.name, err)
		}
		got, err := mp.Parse(typ, p)
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if !reflect.DeepEqual(got, s.msg) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", s.name, got, s.msg)
		}
		// Appending after a prefix keeps the prefix.
		if q := s.msg.Append([]byte("prefix")); !bytes.Equal(q[6:], p) || string(q[:6]) != "prefix" {
			t.Errorf("%s: Append does not append", s.name)
		}
		// Every strict prefix is malformed, and so is one trailing byte.
		for n := 0; n < len(p); n += 1 + len(p)/200 {
			if _, err := mp.Parse(typ, p[:n]); !errors.Is(err, mp.ErrMalformed) {
				t.Errorf("%s: %d of %d bytes: %v", s.name, n, len(p), err)
				break
			}
		}
		if _, err := mp.Parse(typ, append(p, 0)); !errors.Is(err, mp.ErrMalformed) {
			t.Errorf("%s: trailing byte: %v", s.name, err)
		}
	}
	for typ := mp.FirstType; typ <= mp.LastType; typ++ {
		if !seen[typ] {
			t.Errorf("no sample of %s", mp.Name(typ))
		}
	}
}

func TestTypedParsers(t *testing.T) {
	p := (&mp.Register{RequestID: 9, Account: "alice", Iterations: 4096}).Append(nil)
	m, err := mp.ParseRegister(p)
	if err != nil || m.Account != "alice" || m.RequestID != 9 {
		t.Fatalf("ParseRegister = %+v, %v", m, err)
	}
	if _, err := mp.ParseResult(p); !errors.Is(err, mp.ErrMalformed) {
		t.Fatalf("a Register parsed as a Result: %v", err)
	}
	if _, err := mp.Parse(1099, nil); !errors.Is(err, mp.ErrMalformed) {
		t.Fatal("type 1099 parsed")
	}
	if _, err := mp.Parse(1126, nil); !errors.Is(err, mp.ErrMalformed) {
		t.Fatal("type 1126 parsed")
	}
}

func TestMalformedFields(t *testing.T) {
	nan := math.Float32frombits(0x7FC00000)
	inf := float32(math.Inf(1))
	long := string(make([]byte, mp.MaxNameField+1))
	for _, tc := range []struct {
		name string
		msg  mp.Message
	}{
		{"NaN direction", &mp.MoveIntent{DX: nan}},
		{"infinite position", &mp.Positions{Entries: []mp.Position{{X: inf}}}},
		{"NaN appearance", &mp.Appear{Entries: []mp.Appearance{{Y: nan, Name: "a"}}}},
		{"infinite world update", &mp.WorldUpdate{Positions: []mp.Position{{Y: inf}}}},
		{"NaN world update appearance", &mp.WorldUpdate{Appear: []mp.Appearance{{X: nan, Name: "a"}}}},
		{"long world update name", &mp.WorldUpdate{Appear: []mp.Appearance{{Name: "abc" + long}}}},
		{"NaN character", &mp.CharacterList{Characters: []mp.CharacterInfo{{Name: "a", X: nan}}}},
		{"NaN entered", &mp.Entered{Speed: nan}},
		{"NaN where", &mp.WhereResult{DY: inf}},
		{"long name", &mp.CharacterCreate{Name: "abc" + long}},
		{"NUL in name", &mp.Enter{Name: "a\x00b"}},
		{"bad UTF-8", &mp.Greet{Target: "\xff"}},
		{"long detail", &mp.Result{Detail: string(make([]byte, mp.MaxDetailField+1))}},
		{"too many characters", &mp.CharacterList{Characters: make([]mp.CharacterInfo, mp.MaxListedCharacters+1)}},
	} {
		p := tc.msg.Append(nil)
		if _, err := mp.Parse(tc.msg.Type(), p); !errors.Is(err, mp.ErrMalformed) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// PositionUpload's floats are not checked: it is refused whatever it says.
	p := (&mp.PositionUpload{X: nan, Y: inf}).Append(nil)
	if _, err := mp.ParsePositionUpload(p); err != nil {
		t.Errorf("PositionUpload with NaN: %v", err)
	}
	// A count larger than the bytes that remain is refused before allocating.
	huge := []byte{0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	for _, typ := range []wire.MessageType{mp.TypeAppear, mp.TypeDisappear, mp.TypePositions, mp.TypeWorldUpdate} {
		if n := bytesPerCall(func() { mp.Parse(typ, huge) }); n > 1024 {
			t.Errorf("%s: a count of 65535 with no entries allocated %d bytes", mp.Name(typ), n)
		}
		if _, err := mp.Parse(typ, huge); !errors.Is(err, mp.ErrMalformed) {
			t.Errorf("%s: %v", mp.Name(typ), err)
		}
	}
}

// bytesPerCall returns the bytes f allocates per call, on average.
func bytesPerCall(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 100
}

func TestResultErr(t *testing.T) {
	if (&mp.Result{Code: mp.OK}).Err() != nil {
		t.Fatal("OK is an error")
	}
	err := (&mp.Result{Code: mp.TooFar}).Err()
	var e *mp.Error
	if !errors.As(err, &e) || e.Code != mp.TooFar || err.Error() != "TooFar: the target is too far away to greet" {
		t.Fatalf("Err = %v", err)
	}
	if err := (&mp.Result{Code: mp.AuthFailed, Detail: "nope"}).Err(); err.Error() != "AuthFailed: nope" {
		t.Fatalf("Err = %v", err)
	}
	if mp.Code(999).String() != "Code(999)" || mp.Code(999).Text() != "error Code(999)" {
		t.Fatal("unknown code")
	}
	for c := mp.OK; c <= mp.PositionUploadRefused; c++ {
		if c.String() == "" || c.Text() == "" || c.String()[0] == 'C' && c.String() != "CharacterExists" {
			t.Errorf("code %d: %q %q", c, c.String(), c.Text())
		}
	}
	if mp.LoggedOutElsewhere.String() != "LoggedInElsewhere" || mp.LoggedOutReason(9).String() != "LoggedOutReason(9)" {
		t.Fatal("LoggedOutReason.String")
	}
}

func TestPeekRequestID(t *testing.T) {
	p := (&mp.Enter{RequestID: 0xDEADBEEF, Name: "\xff"}).Append(nil)
	if _, err := mp.ParseEnter(p); err == nil {
		t.Fatal("bad name parsed")
	}
	if id, ok := mp.PeekRequestID(p); !ok || id != 0xDEADBEEF {
		t.Fatalf("PeekRequestID = %x %v", id, ok)
	}
	if _, ok := mp.PeekRequestID([]byte{1, 2, 3}); ok {
		t.Fatal("3 bytes hold a request id")
	}
}
