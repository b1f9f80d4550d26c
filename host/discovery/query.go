package discovery

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Limits of Query.
const (
	// DefaultWait is how long Query collects answers when wait is 0.
	DefaultWait = time.Second
	// MaxTargets bounds the targets of one Query.
	MaxTargets = 64
	// MaxResults bounds the answers one Query keeps: a host that sees the
	// broadcast query can answer from as many forged sources as it likes.
	MaxResults = 256
)

// LimitedBroadcast is 255.255.255.255, the target that asks the whole local
// network segment.
var LimitedBroadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})

var (
	// ErrTarget: a target Query cannot send to (not IPv4, unspecified,
	// multicast, port 0), or too many targets.
	ErrTarget = errors.New("discovery: bad query target")
	// ErrBroadcastUnavailable: a target is LimitedBroadcast but the socket
	// could not be allowed to broadcast (SO_BROADCAST). Nothing was sent; the
	// caller may ask again without the broadcast target.
	ErrBroadcastUnavailable = errors.New("discovery: cannot send broadcast queries")
)

// SendError lists the targets a Query could not send to while it could send
// to others; the answers of the others are returned with it.
type SendError struct {
	Failed map[netip.AddrPort]error
}

// Error implements error.
func (e *SendError) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for t, err := range e.Failed {
		parts = append(parts, fmt.Sprintf("%s: %v", t, err))
	}
	slices.Sort(parts)
	return "discovery: query not sent to " + strings.Join(parts, "; ")
}

// Result is one server's answer.
type Result struct {
	From netip.AddrPort // the responder's address; the game server is From.Addr():Info.GamePort
	Info Info
	RTT  time.Duration // from sending the first query to reading this answer
}

// Query sends one query, with a fresh random nonce, to each target, collects
// the answers carrying that nonce for wait (0 means DefaultWait; ctx may end
// it sooner), keeps the first answer of each source and returns them sorted by
// name, then address. Answers are accepted from any source, since a broadcast
// is answered by hosts that were not named; the nonce is what ties them to
// this call.
//
// The error is nil, or: ErrTarget or ErrBroadcastUnavailable before anything
// was sent; an error when no query could be sent at all; ctx.Err() when ctx
// ended first (with the answers so far); a *SendError when some targets could
// not be sent to (with the answers of the others).
func Query(ctx context.Context, targets []netip.AddrPort, wait time.Duration) ([]Result, error) {
	if err := checkTargets(targets); err != nil {
		return nil, err
	}
	if wait <= 0 {
		wait = DefaultWait
	}
	conn, err := openQuerySocket(ctx, targets)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	var nonce Nonce
	rand.Read(nonce[:]) // never fails (crypto/rand.Read panics instead)
	start, sendErr := sendQueries(conn, targets, AppendQuery(nil, nonce))
	if start.IsZero() {
		return nil, fmt.Errorf("discovery: no query could be sent: %w", sendErr)
	}
	deadline, cut := start.Add(wait), false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, cut = d, true
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()

	results := collect(conn, nonce, start, deadline)
	slices.SortFunc(results, func(a, b Result) int {
		return cmp.Or(strings.Compare(a.Info.Name, b.Info.Name), a.From.Compare(b.From))
	})
	if err := ctx.Err(); err != nil {
		return results, err
	}
	if cut && !time.Now().Before(deadline) {
		// ctx's deadline ended the wait; its timer may not have fired yet.
		return results, context.DeadlineExceeded
	}
	if sendErr != nil {
		return results, sendErr
	}
	return results, nil
}

func checkTargets(targets []netip.AddrPort) error {
	switch {
	case len(targets) == 0:
		return fmt.Errorf("%w: no targets", ErrTarget)
	case len(targets) > MaxTargets:
		return fmt.Errorf("%w: %d targets, at most %d", ErrTarget, len(targets), MaxTargets)
	}
	for _, t := range targets {
		a := t.Addr()
		if !a.Is4() || a.IsUnspecified() || a.IsMulticast() || t.Port() == 0 {
			return fmt.Errorf("%w: %s: need an IPv4 host or broadcast address and a port", ErrTarget, t)
		}
	}
	return nil
}

// openQuerySocket binds 127.0.0.1 when every target is loopback, else the
// wildcard address (any interface may carry an answer). A socket that sends
// beyond loopback sets SO_BROADCAST, since a subnet's broadcast address cannot
// be told from a host's; failing that is an error only when a target is
// LimitedBroadcast. (Go's net package already sets it on Linux UDP sockets; we
// set it ourselves so that broadcasting does not rest on that detail.)
func openQuerySocket(ctx context.Context, targets []netip.AddrPort) (*net.UDPConn, error) {
	local, wantBroadcast, needBroadcast := "127.0.0.1:0", false, false
	for _, t := range targets {
		if !t.Addr().IsLoopback() {
			local, wantBroadcast = ":0", true
		}
		needBroadcast = needBroadcast || t.Addr() == LimitedBroadcast
	}
	var broadcastErr error
	lc := net.ListenConfig{}
	if wantBroadcast {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			if err := c.Control(func(fd uintptr) { broadcastErr = setBroadcast(fd) }); err != nil {
				broadcastErr = err
			}
			return nil
		}
	}
	pc, err := lc.ListenPacket(ctx, "udp4", local)
	if err != nil {
		return nil, fmt.Errorf("discovery: open query socket: %w", err)
	}
	if needBroadcast && broadcastErr != nil {
		pc.Close()
		return nil, fmt.Errorf("%w: SO_BROADCAST: %v", ErrBroadcastUnavailable, broadcastErr)
	}
	return pc.(*net.UDPConn), nil
}

// sendQueries sends q once to each distinct target. It returns when the first
// query left (zero if none did) and a *SendError for the targets that failed.
func sendQueries(conn *net.UDPConn, targets []netip.AddrPort, q []byte) (time.Time, error) {
	var start time.Time
	var failed map[netip.AddrPort]error
	sent := make(map[netip.AddrPort]bool, len(targets))
	for _, t := range targets {
		if sent[t] {
			continue
		}
		sent[t] = true
		now := time.Now()
		if _, err := conn.WriteToUDPAddrPort(q, t); err != nil {
			if failed == nil {
				failed = make(map[netip.AddrPort]error)
			}
			failed[t] = err
			continue
		}
		if start.IsZero() {
			start = now
		}
	}
	if failed != nil {
		return start, &SendError{Failed: failed}
	}
	return start, nil
}

// collect reads answers until the read deadline, keeping the first valid one
// of each source, at most MaxResults.
func collect(conn *net.UDPConn, nonce Nonce, start, deadline time.Time) []Result {
	var results []Result
	seen := make(map[netip.AddrPort]bool)
	buf := make([]byte, MaxAnswerSize+1) // a longer datagram shows as too long
	for len(results) < MaxResults && time.Now().Before(deadline) {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			continue // transient, e.g. an ICMP error; the loop is bounded by the deadline
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		got, info, err := ParseAnswer(buf[:n])
		if err != nil || got != nonce || seen[from] || !from.Addr().Is4() {
			continue
		}
		seen[from] = true
		results = append(results, Result{From: from, Info: info, RTT: time.Since(start)})
	}
	return results
}
