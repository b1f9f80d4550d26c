package netstack_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

const (
	typeEchoReliable wire.MessageType = 1000
	typeEchoOrdered  wire.MessageType = 1001
)

func echoRegistry(t *testing.T) *wire.Registry {
	t.Helper()
	reg := gamemsg.NewRegistry()
	for _, s := range []wire.Schema{
		{ID: typeEchoReliable, Name: "echo-reliable", Direction: wire.BothDirections, Channel: wire.Reliable,
			MinLen: 8, MaxLen: 8, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		{ID: typeEchoOrdered, Name: "echo-ordered", Direction: wire.BothDirections, Channel: wire.ReliableOrdered,
			MinLen: 8, MaxLen: 8, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
	} {
		if err := reg.Register("echo-test", s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// echoLog checks, per client and type, that message n arrives exactly once,
// and for the ordered type in order.
type echoLog struct {
	mu   sync.Mutex
	seen map[echoKey][]bool
	next map[echoKey]uint32 // next expected ordered index
}

type echoKey struct {
	client uint32
	typ    wire.MessageType
}

func newEchoLog() *echoLog {
	return &echoLog{seen: map[echoKey][]bool{}, next: map[echoKey]uint32{}}
}

func (l *echoLog) record(client uint32, typ wire.MessageType, payload []byte, per int) error {
	if len(payload) != 8 {
		return fmt.Errorf("payload of %d bytes", len(payload))
	}
	owner, n := binary.LittleEndian.Uint32(payload), binary.LittleEndian.Uint32(payload[4:])
	if owner != client {
		return fmt.Errorf("client %d got a message of client %d", client, owner)
	}
	if n >= uint32(per) {
		return fmt.Errorf("index %d out of range", n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := echoKey{client, typ}
	if l.seen[k] == nil {
		l.seen[k] = make([]bool, per)
	}
	if l.seen[k][n] {
		return fmt.Errorf("client %d %v #%d delivered twice", client, typ, n)
	}
	l.seen[k][n] = true
	if typ == typeEchoOrdered {
		if n != l.next[k] {
			return fmt.Errorf("client %d ordered #%d delivered when #%d was expected", client, n, l.next[k])
		}
		l.next[k]++
	}
	return nil
}

func (l *echoLog) complete(client uint32, per int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, typ := range []wire.MessageType{typeEchoReliable, typeEchoOrdered} {
		s := l.seen[echoKey{client, typ}]
		if len(s) != per {
			return false
		}
		for _, ok := range s {
			if !ok {
				return false
			}
		}
	}
	return true
}

// TestUDPEchoManyClients: 8 clients each send 200 Reliable and 200
// ReliableOrdered module messages; the server echoes each with Send. Every
// message arrives exactly once in both directions, ordered ones in order.
func TestUDPEchoManyClients(t *testing.T) {
	const (
		nClients = 8
		per      = 200
	)
	reg := echoRegistry(t)
	atServer := newEchoLog()
	var errMu sync.Mutex
	var serverErr error
	srv := quietServer(t, func(c *netstack.ServerConfig) { c.Registry = reg })
	echo := func(client uint32, h *wire.Header, payload []byte) {
		err := atServer.record(client, h.Type, payload, per)
		if err == nil {
			err = srv.Send(client, h.Type, h.Channel, payload)
		}
		if err != nil {
			errMu.Lock()
			if serverErr == nil {
				serverErr = err
			}
			errMu.Unlock()
		}
	}
	srv.Handle(typeEchoReliable, echo)
	srv.Handle(typeEchoOrdered, echo)

	atClients := newEchoLog()
	var wg sync.WaitGroup
	errs := make(chan error, nClients)
	ids := make(chan uint32, nClients)
	for i := range nClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runEchoClient(srv, reg, fmt.Sprintf("echo%d", i), per, atClients, ids)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	close(ids)
	errMu.Lock()
	defer errMu.Unlock()
	if serverErr != nil {
		t.Fatalf("server side: %v", serverErr)
	}
	for id := range ids {
		if !atServer.complete(id, per) {
			t.Errorf("server did not receive every message of client %d", id)
		}
	}
}

// runEchoClient dials, sends per messages of each echo type (interleaved),
// and receives the echoes until all arrived, then checks nothing more comes.
func runEchoClient(srv *netstack.Server, reg *wire.Registry, name string, per int, log *echoLog, ids chan<- uint32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := netstack.Dial(ctx, gameClient(netstack.ClientConfig{Server: srv.Addr(), Name: name, Pin: srv.Pin(), Registry: reg}))
	if err != nil {
		return fmt.Errorf("%s: dial: %w", name, err)
	}
	defer c.Close()
	id := c.ID()
	ids <- id
	for n := range per {
		var p [8]byte
		binary.LittleEndian.PutUint32(p[:], id)
		binary.LittleEndian.PutUint32(p[4:], uint32(n))
		if err := c.Send(typeEchoReliable, wire.Reliable, p[:]); err != nil {
			return fmt.Errorf("%s: send reliable #%d: %w", name, n, err)
		}
		if err := c.Send(typeEchoOrdered, wire.ReliableOrdered, p[:]); err != nil {
			return fmt.Errorf("%s: send ordered #%d: %w", name, n, err)
		}
	}
	for got := 0; got < 2*per; {
		m, err := c.Receive(ctx)
		if err != nil {
			return fmt.Errorf("%s: after %d echoes: %w", name, got, err)
		}
		if m.Header.Type != typeEchoReliable && m.Header.Type != typeEchoOrdered {
			continue // GameStateSync
		}
		if err := log.record(id, m.Header.Type, m.Payload, per); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		got++
	}
	if !log.complete(id, per) {
		return fmt.Errorf("%s: echoes incomplete", name)
	}
	// No extra copy follows.
	qctx, qcancel := context.WithTimeout(ctx, quietWait)
	defer qcancel()
	for {
		m, err := c.Receive(qctx)
		if err != nil {
			return nil
		}
		if m.Header.Type == typeEchoReliable || m.Header.Type == typeEchoOrdered {
			return fmt.Errorf("%s: extra echo after all %d arrived", name, 2*per)
		}
	}
}
