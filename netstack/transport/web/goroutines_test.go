package web_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxGoroutinesPerWTSession is what a WebTransport session may cost the
// server in goroutines: quic-go's connection loop and send queue; HTTP/3's
// control stream reader and datagram dispatcher; webtransport-go's
// connection-context watcher, two stream acceptors and the session's
// CONNECT stream reader and writer; the connection's ServeQUICConn; this
// package's datagram reader and unidirectional stream acceptor. None waits
// to write: a session's writer runs only while it has datagrams to send.
const maxGoroutinesPerWTSession = 12

// serverGoroutines counts the goroutines labelled side=server, and returns
// their stacks for a failure's message.
func serverGoroutines() (int, string) {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n := 0
	var ours []string
	for rec := range strings.SplitSeq(buf.String(), "\n\n") {
		if !strings.Contains(rec, `"side":"server"`) {
			continue
		}
		count, _, _ := strings.Cut(rec, " ")
		k, _ := strconv.Atoi(count)
		n += k
		ours = append(ours, rec)
	}
	return n, strings.Join(ours, "\n\n")
}

// TestWebTransportSessionGoroutines: each WebTransport session costs the
// server at most maxGoroutinesPerWTSession goroutines once it is open and
// has echoed a message (the server's goroutines are those started under a
// label, the clients' are not).
func TestWebTransportSessionGoroutines(t *testing.T) {
	var r *rig
	pprof.Do(context.Background(), pprof.Labels("side", "server"), func(context.Context) { r = startRig(t, nil) })
	time.Sleep(100 * time.Millisecond) // the server's own goroutines started
	base, _ := serverGoroutines()
	const sessions = 4
	for i := range sessions {
		cli, _ := r.dial(t, "webtransport", fmt.Sprintf("g%d", i))
		echo(t, cli, []byte("hello"))
	}
	limit := base + sessions*maxGoroutinesPerWTSession
	deadline := time.Now().Add(waitLong)
	for {
		n, stacks := serverGoroutines()
		if n <= limit {
			t.Logf("%d server goroutines for %d sessions (%d before them)", n, sessions, base)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d server goroutines for %d WebTransport sessions, %d before them: %.1f per session, want at most %d\n%s",
				n, sessions, base, float64(n-base)/sessions, maxGoroutinesPerWTSession, stacks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
