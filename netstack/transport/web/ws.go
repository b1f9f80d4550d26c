package web

import (
	"context"
	"time"

	"github.com/coder/websocket"
)

// Subprotocol is the WebSocket subprotocol a client must offer (and the
// server selects): its messages are v4 datagrams.
const Subprotocol = "sparkhost.v4"

// wsWriteTimeout bounds one message's write: a peer that reads nothing for
// that long (its TCP window shut) loses its session.
const wsWriteTimeout = 10 * time.Second

// wsLink is a WebSocket session's link: one binary message per datagram.
type wsLink struct {
	c      *websocket.Conn
	cancel context.CancelFunc // ends the session's read loop
}

func (l *wsLink) send(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), wsWriteTimeout)
	defer cancel()
	return l.c.Write(ctx, websocket.MessageBinary, b)
}

// close sends the close frame and waits (up to the library's 5 s) for the
// peer's, on a goroutine of its own: callers (the janitor, the writer) do
// not wait. The read loop's context ends after, so that the close frame
// is not cut off.
func (l *wsLink) close(reason string) {
	go func() {
		_ = l.c.Close(websocket.StatusGoingAway, reason)
		l.cancel()
	}()
}

// serveWS reads a WebSocket session's messages until it ends: each binary
// message is a datagram; a text message or one over the read limit (the
// library refuses it from its header, before reading it) ends the session.
func serveWS(ctx context.Context, h *Hub, p *peer, c *websocket.Conn) {
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			h.remove(p, "session ended")
			return
		}
		if typ != websocket.MessageBinary {
			_ = c.Close(websocket.StatusUnsupportedData, "binary messages only")
			h.remove(p, "text message")
			return
		}
		h.deliver(p, b)
	}
}
