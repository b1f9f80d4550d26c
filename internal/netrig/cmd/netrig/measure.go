package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/sparkhost/sparkhost/internal/netrig"
)

const echoPort = 7000

// probe: every client probes the echo server at once; one block of lines
// per client.
func probe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	var rf rigFlags
	rf.register(fs)
	count := fs.Int("count", 500, "probes per client")
	interval := fs.Duration("interval", 20*time.Millisecond, "time between probes")
	size := fs.Int("size", 64, "probe payload in bytes (at least 40)")
	rebind := fs.Duration("rebind-every", 0, "force a NAT rebinding of every client this often (0: never)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, echo, err := startWithEcho(&rf)
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *rebind > 0 {
		go rebindEvery(ctx, r, *rebind)
	}
	results := make([]*netrig.ProbeResult, r.Clients())
	errs := make([]error, r.Clients())
	var wg sync.WaitGroup
	for i := range r.Clients() {
		wg.Go(func() {
			conn, err := r.Client(i).ListenUDP(0)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			results[i], errs[i] = netrig.Probe(ctx, conn, echo,
				netrig.ProbeConfig{Count: *count, Interval: *interval, Size: *size})
		})
	}
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			fmt.Printf("client %d: %v\n", i, errs[i])
			continue
		}
		printProbe(r, i, res)
	}
	return nil
}

func printProbe(r *netrig.Rig, i int, res *netrig.ProbeResult) {
	st := r.Stats(i)
	fmt.Printf("client %d (%s)\n", i, r.Client(i).Profile())
	fmt.Printf("  rtt   %s\n", netrig.Summarize(res.RTTs()))
	fmt.Printf("  up    %s\n", netrig.Summarize(res.Ups()))
	fmt.Printf("  down  %s\n", netrig.Summarize(res.Downs()))
	fmt.Printf("  loss  up %.2f%%, down %.2f%%, round trip %.2f%% (%d sent, %d reached the server, %d echoed)\n",
		100*res.LossUp(), 100*res.LossDown(), 100*res.LossRoundTrip(), res.Sent, res.ServerReceived, res.Echoed)
	fmt.Printf("  order %d duplicated, %d reordered\n", res.Duplicates, res.Reordered)
	fmt.Printf("  seen  %v\n", res.Seen())
	fmt.Printf("  rig   up: %d in, %d lost, %d cut; down: %d in, %d lost, %d cut\n",
		st.Up.Packets, st.Up.Lost, st.Up.OutageDrops, st.Down.Packets, st.Down.Lost, st.Down.OutageDrops)
	fmt.Printf("  late  up %v; down %v\n", st.Up.Late, st.Down.Late)
}

func rebindEvery(ctx context.Context, r *netrig.Rig, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range r.Clients() {
			if err := r.Rebind(i); err != nil {
				fmt.Fprintf(os.Stderr, "rebind client %d: %v\n", i, err)
			}
		}
	}
}

// blast: every client loads its link towards the server at once.
func blast(args []string) error {
	fs := flag.NewFlagSet("blast", flag.ContinueOnError)
	var rf rigFlags
	rf.register(fs)
	size := fs.Int("size", 1200, "datagram payload in bytes")
	load := fs.Int64("load", 0, "offered load per client, bit/s at the IP layer (0: flat out)")
	dur := fs.Duration("duration", 3*time.Second, "how long to load")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, echo, err := startWithEcho(&rf)
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results := make([]netrig.BlastResult, r.Clients())
	errs := make([]error, r.Clients())
	var wg sync.WaitGroup
	for i := range r.Clients() {
		wg.Go(func() {
			conn, err := r.Client(i).ListenUDP(0)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			results[i], errs[i] = netrig.Blast(ctx, conn, echo,
				netrig.BlastConfig{Size: *size, Rate: *load, Duration: *dur, Wait: time.Second})
		})
	}
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			fmt.Printf("client %d: %v\n", i, errs[i])
			continue
		}
		fmt.Printf("client %d (%s): offered %.3f Mbit/s (%d datagrams of %d bytes in %v), %.3f Mbit/s reached the server (%.0f datagrams/s, %.2f%% lost)\n",
			i, r.Client(i).Profile(), res.SentRate()/1e6, res.Sent, res.Size, res.Elapsed.Round(time.Millisecond),
			res.ReceivedRate()/1e6, float64(res.Received)/res.Elapsed.Seconds(),
			100*(1-float64(res.Received)/float64(res.Sent)))
	}
	return nil
}

func startWithEcho(rf *rigFlags) (*netrig.Rig, netip.AddrPort, error) {
	r, err := rf.start()
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	echo, err := r.Server.StartEcho(echoPort)
	if err != nil {
		r.Close()
		return nil, echo, err
	}
	return r, echo, nil
}
