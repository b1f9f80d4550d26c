package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestMalformedRequestIsRefusedAndSessionGoesOn: the greeter's Shout is a
// Reliable str; one carrying a NUL fails the schema. It is acknowledged,
// counted (Malformed), told to the client (MessageRefused), and the next
// Shout is answered: nothing waits for the refused one.
func TestMalformedRequestIsRefusedAndSessionGoesOn(t *testing.T) {
	path := testplugin.Build(t, "./examples/greeter")
	srv, _ := startHost(t, withModules(path))
	alice := dialAs(t, srv, "alice", greeterRegistry())
	waitStr(t, alice, 1001, "welcome alice, 1 here")

	w := wire.NewWriter(nil)
	w.Str("bad\x00shout")
	if err := alice.Send(1000, wire.Reliable, w.Bytes()); err != nil {
		t.Fatal(err)
	}
	sendStr(t, alice, 1000, "fine")
	waitStr(t, alice, 1001, "alice: fine")
	eventually(t, "the refusal counted on both sides", func() bool {
		return srv.Stats().Net.RefusedBy[wire.RefusedMalformed] == 1 && alice.Stats().PeerRefusals == 1
	})
	if st := alice.Stats(); st.Retransmissions > 5 {
		t.Errorf("%d retransmissions: the refused Shout was not acknowledged", st.Retransmissions)
	}
}

// orderedRequests is a module whose one request type travels on the
// ReliableOrdered channel with a screened string; it answers each request
// with the same payload.
func orderedRequests(got chan<- string) supervisor.Spec {
	schemas := []wire.Schema{
		{ID: 1500, Name: "Ask", Direction: wire.ClientToServer, Channel: wire.ReliableOrdered, MinLen: 2, MaxLen: 100, StringFieldOffset: 0, RequiresAdmitted: true},
		{ID: 1501, Name: "Told", Direction: wire.ServerToClient, Channel: wire.ReliableOrdered, MinLen: 2, MaxLen: 100, StringFieldOffset: 0, RequiresAdmitted: true},
	}
	return supervisor.Spec{Source: "ordered", Kind: "go", New: func() (module.Module, error) {
		return &supervisor.Funcs{
			Manifest: module.Manifest{Name: "ordered", Version: "1", Messages: schemas},
			OnEvent: func(h module.Host, ev *module.Event) {
				if ev.Kind != module.EventMessage || ev.Type != 1500 {
					return
				}
				r := wire.NewReader(ev.Payload)
				got <- r.Str()
				_ = h.Send(ev.Client, 1501, ev.Payload)
			},
		}, nil
	}}
}

// TestMalformedOrderedRequestDoesNotStallTheChannel: on ReliableOrdered a
// refused message takes its turn, so the requests after it are delivered,
// in order; the client learns the module's types from the announcement.
func TestMalformedOrderedRequestDoesNotStallTheChannel(t *testing.T) {
	got := make(chan string, 16)
	srv, _ := startHost(t, nil, orderedRequests(got))
	c := dialAs(t, srv, "bob", gamemsg.NewRegistry()) // knows no module type of its own
	eventually(t, "the module schemas announced", func() bool {
		m, ok := c.ModuleSchemas()
		return ok && len(m.Types) == 2 && m.Types[0].ID == 1500 && m.Types[0].Owner == "ordered" &&
			m.Types[1].Name == "Told" && m.Types[1].Channel == wire.ReliableOrdered
	})
	str := func(s string) []byte { w := wire.NewWriter(nil); w.Str(s); return w.Bytes() }
	for _, p := range [][]byte{str("one"), str("t\x00wo"), {0xFF, 0xFF}, str("three")} {
		if err := c.Send(1500, wire.ReliableOrdered, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"one", "three"} {
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("module got %q, want %q", s, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("module never got %q: the ordered channel stalled", want)
		}
	}
	// The answers come back on the client's ordered channel, accepted with
	// the announced schema of a type its own registry does not know.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var told []string
	for len(told) < 2 {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("answers %q: %v", told, err)
		}
		if m.Header.Type == 1501 {
			r := wire.NewReader(m.Payload)
			told = append(told, r.Str())
		}
	}
	if told[0] != "one" || told[1] != "three" {
		t.Fatalf("answers %q", told)
	}
	eventually(t, "two refusals counted and told", func() bool {
		n := srv.Stats().Net
		return n.RefusedBy[wire.RefusedMalformed] == 2 && c.Stats().PeerRefusals == 2
	})
	if st := c.Stats(); st.MessagesRefused != 0 {
		t.Errorf("the client refused %d of the server's messages", st.MessagesRefused)
	}
	select {
	case <-c.Done():
		t.Fatal("the session ended")
	default:
	}
}
