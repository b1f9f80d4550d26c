//go:build !linux

package main

import (
	"errors"
	"net/netip"
	"sync/atomic"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/transport"
)

// sharedSocket needs IP_PKTINFO, which this build does not use.
type sharedSocket struct {
	Dropped, Datagrams, Calls, RecvDatagrams, RecvCalls atomic.Uint64
}

func newSharedSocket(netip.AddrPort) (*sharedSocket, error) {
	return nil, errors.New("-clients-socket shared needs Linux: use -clients-socket per-client")
}

func (s *sharedSocket) view(netip.Addr) (*view, error) {
	return nil, errors.New("no shared socket")
}

func (s *sharedSocket) Close() error { return nil }

// view and engine need the shared socket.
type view struct{ transport.Transport }

type engine struct{}

func newEngine(*sharedSocket, []*netstack.Client, []*loop, []*view, clientOpts) *engine { return nil }
func (s *sharedSocket) start(*engine)                                                   {}
func (e *engine) stop()                                                                 {}
