package main

import (
	"bufio"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/sparkhost/sparkhost/bench/internal/echosrv"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/ratelimit"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// serve runs the echo server until its stdin ends; each line read is
// answered with its CPU time, messages echoed and datagrams each way. Its
// CPU profile (-profile) runs from the first line to the second: the
// measured window alone, without the handshakes and the warm-up.
func serve(clients int, ch wire.Channel) error {
	stop := func() {}
	defer func() { stop() }()
	lifted := ratelimit.Config{Burst: 10000, RefillPerSecond: 10000}
	srv, err := echosrv.New(echoSchema(ch), netstack.ServerConfig{MaxClients: clients + 16,
		// Every client is on this machine, 250 to a /24.
		ConnectBudget: lifted, PrefixBudget: lifted,
		HalfOpen: netstack.HalfOpenConfig{PerAddress: 1024, PerPrefix: 4096},
	})
	if err != nil {
		return err
	}
	var echoed atomic.Uint64
	// The handler answers at once; the server packs a client's answers of
	// one receive pass into its datagrams at the end of the pass.
	// It answers on the channel the message came on.
	srv.Handle(echoType, func(id uint32, h *wire.Header, p []byte) {
		if srv.Send(id, echoType, h.Channel, p) == nil {
			echoed.Add(1)
		}
	})
	srv.Start()
	defer srv.Close()
	fmt.Printf("ready %s %s\n", srv.Addr(), srv.Pin())
	in := bufio.NewScanner(os.Stdin)
	for lines := 0; in.Scan(); lines++ {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		ctr := srv.Counters()
		fmt.Printf("cpu %d %d %d %d %d %d\n", ru.Utime.Nano()+ru.Stime.Nano(), echoed.Load(),
			ctr.PacketsReceived.Load(), ctr.PacketsSent.Load(), ctr.BytesReceived.Load(), ctr.BytesSent.Load())
		switch lines { // after the answer: the window's CPU time is not the profiler's
		case 0:
			stop = profile("server")
		case 1:
			stop()
			stop = func() {}
		}
	}
	return nil
}
