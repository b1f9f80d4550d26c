package netstack

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/reliable"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The reliable layer is not the first to give up (docs/protocol.md §5.4):
// a v4 session whose path goes dark both ways for longer than ten
// retransmissions' waits at the RTO it has measured, but shorter than its
// connection timeout, survives the outage on both ends, and every reliable
// message sent during it is delivered once, in order. Real UDP through the
// loopback relay; the client asks for no resume ticket, so a give-up would
// close the session (not hold it).

const giveUpTimeout = 10 * time.Second // both ends' liveness and reliable connection timeout

// oldGiveUp is when a sender used to give up on a packet sent into the dark
// at RTO rto: after its 10th retransmission's wait, RTO·(1+2+4+8·8).
func oldGiveUp(rto time.Duration) time.Duration { return 71 * rto }

func TestV4SessionOutlivesRetransmissionsWithinTimeout(t *testing.T) {
	r, c, id := giveUpRig(t, 4)

	// Traffic both ways first, so that both ends have RTT samples and a
	// loopback-sized RTO (50 ms, the minimum, when the machine keeps up).
	sendLines(t, r, c, id, 1, 2)
	if got := lines(t, c, 2); !slices.Equal(got, seq("s", 1, 2)) {
		t.Fatalf("before the outage the client got %v", got)
	}
	waitFor(t, "c1, c2 at the server", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) >= 2 })

	rto := max(engineStats(c.sess).RTO, engineStats(r.srv.admitted(id).session).RTO)
	dark := min(max(oldGiveUp(rto)+time.Second, 4500*time.Millisecond), giveUpTimeout-3*time.Second)
	if oldGiveUp(rto) >= dark {
		t.Logf("note: RTO %v on this busy machine: the old rule would give up after %v, later than this %v outage", rto, oldGiveUp(rto), dark)
	}
	r.link.SetDark(true)
	sendLines(t, r, c, id, 3, 5)
	time.Sleep(dark)
	r.link.SetDark(false)
	checkOpen(t, c, dark)
	if got := lines(t, c, 3); !slices.Equal(got, seq("s", 3, 5)) {
		t.Fatalf("after the outage the client got %v, want s3..s5 once each", got)
	}
	waitFor(t, "c3..c5 at the server", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) >= 5 })
	time.Sleep(resumeQuiet)
	r.mu.Lock()
	got, left, held := slices.Clone(r.got), len(r.left), len(r.held)
	r.mu.Unlock()
	if !slices.Equal(got, seq("c", 1, 5)) {
		t.Fatalf("the server received %v, want c1..c5 once each, in order", got)
	}
	if left != 0 || held != 0 {
		t.Fatalf("the session ended (%d left, %d held) during a %v outage, shorter than its %v timeout", left, held, dark, giveUpTimeout)
	}
	checkOpen(t, c, dark)
	st := engineStats(c.sess)
	t.Logf("RTO before the outage %v, outage %v (old rule's give-up %v); client retransmissions %d", rto, dark, oldGiveUp(rto), st.Retransmissions)
}

// checkOpen fails the test if c's session has ended.
func checkOpen(t *testing.T, c *Client, dark time.Duration) {
	t.Helper()
	select {
	case <-c.Done():
		reason, detail := c.CloseReason()
		t.Fatalf("the client closed with %v (%s) during a %v outage; its timeout is %v", reason, detail, dark, giveUpTimeout)
	default:
	}
}

// giveUpRig connects a client speaking protocol version through the
// dark-able relay, both ends with giveUpTimeout; the client asks for no
// resume ticket.
func giveUpRig(t *testing.T, version uint16) (*seatRig, *Client, uint32) {
	r := newSeatRig(t, resumeHoldOK, func(c *ServerConfig) {
		c.Timeout, c.HeartbeatInterval = giveUpTimeout, resumeBeat
	})
	cfg := r.clientConfig("dora")
	cfg.Resumable, cfg.Timeout, cfg.Protocol = false, giveUpTimeout, version
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	c, err := Dial(ctx, cfg)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.sess.version != version {
		t.Fatalf("the session speaks v%d, want v%d", c.sess.version, version)
	}
	return r, c, c.ID()
}

// A v3 session keeps v3's rule (protocol-v3.md §7, frozen): its client
// gives up on a message sent into the same outage after the 10th
// retransmission's wait, before the liveness timeout.
func TestV3SessionKeepsItsRetransmissionCount(t *testing.T) {
	r, c, _ := giveUpRig(t, 3)
	for _, l := range seq("c", 1, 2) {
		if err := c.Send(lineType, wire.ReliableOrdered, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	c.Flush()
	waitFor(t, "c1, c2 at the server", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.got) >= 2 })
	rto := engineStats(c.sess).RTO
	r.link.SetDark(true)
	start := time.Now()
	if err := c.Send(lineType, wire.ReliableOrdered, []byte("c3")); err != nil {
		t.Fatal(err)
	}
	c.Flush()
	select {
	case <-c.Done():
	case <-time.After(resumeWait):
		t.Fatal("the v3 client never gave up")
	}
	took := time.Since(start)
	if reason, detail := c.CloseReason(); reason != wire.DisconnectReliableDeliveryFailed {
		t.Fatalf("the v3 client closed with %v (%s) after %v, want ReliableDeliveryFailed", reason, detail, took)
	}
	t.Logf("v3 client gave up after %v (RTO %v: the rule says %v)", took, rto, oldGiveUp(rto))
}

// sendLines sends s<from>..s<to> from the server and c<from>..c<to> from
// the client, ReliableOrdered, and flushes both.
func sendLines(t *testing.T, r *seatRig, c *Client, id uint32, from, to int) {
	t.Helper()
	for _, l := range seq("s", from, to) {
		if err := r.srv.Send(id, lineType, wire.ReliableOrdered, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	r.srv.Flush()
	for _, l := range seq("c", from, to) {
		if err := c.Send(lineType, wire.ReliableOrdered, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	c.Flush()
}

func engineStats(s *session) reliable.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rel.engine.Stats()
}
