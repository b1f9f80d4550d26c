package netrig

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// ipUDPHeader is what IPv4 and UDP add to a payload on the wire (the unit
// of tbf's rate and of Rate).
const ipUDPHeader = 28

// BlastConfig says how to load a link one way.
type BlastConfig struct {
	// Size is each datagram's UDP payload in bytes; 0 means 1200.
	Size int
	// Rate is the sending rate in bits per second counted at the IP layer
	// (payload and 28 bytes of headers); 0 means as fast as the socket goes.
	Rate int64
	// Duration is how long to send; 0 means 2 s.
	Duration time.Duration
	// Count, when positive, stops the blast after that many datagrams
	// (or Duration, whichever comes first).
	Count int
	// Wait is how long to let the queues drain before asking the count;
	// 0 means 1 s.
	Wait time.Duration
}

// BlastResult is what a blast measured at both ends.
type BlastResult struct {
	Sent, Received int           // datagrams sent, and counted by the server
	Size           int           // payload bytes each
	Elapsed        time.Duration // time spent sending
}

// SentRate is the offered load in bits per second at the IP layer.
func (b BlastResult) SentRate() float64 { return b.bits(b.Sent) }

// ReceivedRate is what reached the server, in bits per second at the IP
// layer, over the sending time.
func (b BlastResult) ReceivedRate() float64 { return b.bits(b.Received) }

func (b BlastResult) bits(n int) float64 {
	if b.Elapsed <= 0 {
		return 0
	}
	return float64(n*(b.Size+ipUDPHeader)*8) / b.Elapsed.Seconds()
}

// Blast sends count-only datagrams from conn to an echo server for
// cfg.Duration at cfg.Rate, then asks the server how many arrived. Received
// is -1 when the count never came back.
func Blast(ctx context.Context, conn *net.UDPConn, server netip.AddrPort, cfg BlastConfig) (BlastResult, error) {
	if cfg.Size < echoHeader {
		cfg.Size = 1200
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 2 * time.Second
	}
	if cfg.Wait <= 0 {
		cfg.Wait = time.Second
	}
	flow := rand.Uint32()
	buf := make([]byte, cfg.Size)
	res := BlastResult{Size: cfg.Size, Received: -1}
	start := time.Now()
	end := start.Add(cfg.Duration)
	var perPacket time.Duration
	if cfg.Rate > 0 {
		perPacket = time.Duration(float64(time.Second) * float64((cfg.Size+ipUDPHeader)*8) / float64(cfg.Rate))
	}
	for now := start; now.Before(end) && ctx.Err() == nil && (cfg.Count <= 0 || res.Sent < cfg.Count); now = time.Now() {
		if perPacket > 0 {
			// Send what is due by now, then sleep a little: pacing in bursts
			// of at most a millisecond's worth.
			due := int(now.Sub(start)/perPacket) + 1
			if cfg.Count > 0 {
				due = min(due, cfg.Count)
			}
			for res.Sent < due {
				res.Sent++
				echoPacket{kind: kindCount, flow: flow, seq: uint64(res.Sent)}.put(buf)
				conn.WriteToUDPAddrPort(buf, server)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		res.Sent++
		echoPacket{kind: kindCount, flow: flow, seq: uint64(res.Sent)}.put(buf)
		conn.WriteToUDPAddrPort(buf, server)
	}
	res.Elapsed = time.Since(start)
	if err := sleepCtx(ctx, cfg.Wait); err != nil {
		return res, err
	}
	rec := newProbeRecorder(0)
	done := make(chan error, 1)
	go func() { done <- rec.read(conn, flow) }()
	for i := 0; i < 40 && !rec.haveStats() && ctx.Err() == nil; i++ {
		b := make([]byte, echoHeader)
		echoPacket{kind: kindStats, flow: flow, seq: uint64(i)}.put(b)
		conn.WriteToUDPAddrPort(b, server)
		sleepCtx(ctx, 50*time.Millisecond)
	}
	conn.SetReadDeadline(time.Now())
	<-done
	conn.SetReadDeadline(time.Time{})
	res.Received = int(rec.stats)
	return res, ctx.Err()
}
