package web

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// quarterIDAllowance is what a WebTransport datagram's own prefix (the
// session's quarter stream ID, a QUIC varint) may take beyond the QUIC
// DATAGRAM maximum quic-go reports: 2 bytes cover sessions on the first
// 65,536 streams of a connection, and this server lets a connection open
// far fewer.
const quarterIDAllowance = 2

// streamWriteTimeout bounds one write on the overflow stream: a peer that
// grants no flow control credit for that long loses its session.
const streamWriteTimeout = 10 * time.Second

// wtLink is a WebTransport session's link: datagrams as WebTransport
// datagrams, those larger than the session carries on the overflow stream.
type wtLink struct {
	sess     *webtransport.Session
	max      int
	overflow *webtransport.SendStream // opened at first need; the writer goroutine's
	frame    []byte
	closer   io.Closer      // a client's dialer, closed with the session; nil on a server
	counted  *atomic.Uint64 // datagrams sent on the overflow stream
}

func (l *wtLink) send(b []byte) error {
	if len(b) <= l.max {
		err := l.sess.SendDatagram(b)
		if _, tooLarge := errors.AsType[*quic.DatagramTooLargeError](err); !tooLarge {
			return err
		}
	}
	if l.overflow == nil {
		s, err := l.sess.OpenUniStream()
		if err != nil {
			return err
		}
		l.overflow = s
	}
	l.counted.Add(1)
	l.frame = appendFrame(l.frame[:0], b)
	_ = l.overflow.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err := l.overflow.Write(l.frame)
	return err
}

func (l *wtLink) close(reason string) {
	_ = l.sess.CloseWithError(0, reason)
	if l.closer != nil {
		_ = l.closer.Close()
	}
}

// datagramMax is the largest WebTransport datagram the session sends now:
// quic-go says so when asked to send a datagram larger than any (nothing
// is sent). It grows when path MTU discovery finds room, never shrinks
// below the QUIC minimum; a session packs to the size it had when it began.
func datagramMax(sess *webtransport.Session) (int, error) {
	err := sess.SendDatagram(sizeProbe[:])
	if e, ok := errors.AsType[*quic.DatagramTooLargeError](err); ok {
		return int(e.MaxDatagramPayloadSize) - quarterIDAllowance, nil
	}
	if err == nil {
		err = errors.New("web: a 16 KiB WebTransport datagram was accepted")
	}
	return 0, err
}

// sizeProbe is what datagramMax offers: larger than any QUIC packet (a
// QUIC packet fits one UDP datagram of the path; quic-go's hold at most
// 1,452 bytes, a jumbo-frame path's 9,000), never written, shared. HTTP/3
// copies what it is given before quic-go refuses it: 16 KiB of garbage a
// session, not 128 (a fresh 64 KiB probe and its copy).
var sizeProbe [16 << 10]byte

// serveWT runs a WebTransport session of h until it ends: datagrams and the
// peer's overflow stream are delivered; a second incoming stream is
// refused. Two goroutines: this one, reading datagrams, and the
// unidirectional streams' acceptor. No bidirectional stream can arrive:
// the QUIC connection grants the peer none besides the session's CONNECT
// stream (maxIncomingBidi), so none is waited for.
func serveWT(h *Hub, p *peer, sess *webtransport.Session) {
	ctx := sess.Context()
	go func() {
		first := true
		for {
			s, err := sess.AcceptUniStream(ctx)
			if err != nil {
				return
			}
			if !first {
				s.CancelRead(streamRefused)
				continue
			}
			first = false
			go readOverflow(h, p, s)
		}
	}()
	for {
		b, err := sess.ReceiveDatagram(ctx)
		if err != nil {
			h.remove(p, "session ended")
			return
		}
		h.deliver(p, b)
	}
}

// maxIncomingBidi is quic.Config.MaxIncomingStreams of a WebTransport
// server's connections: the session's CONNECT stream (or one HTTP/3
// request at a time, /web.json), no WebTransport bidirectional stream.
// A client's is none (-1): the server opens no bidirectional stream.
const maxIncomingBidi = 1

// streamRefused is the stream error code of a refused stream.
const streamRefused webtransport.StreamErrorCode = 1

func readOverflow(h *Hub, p *peer, s *webtransport.ReceiveStream) {
	for {
		b, err := readFrame(s)
		if err != nil {
			if !errors.Is(err, context.Canceled) && !isEnd(err) {
				h.remove(p, "bad overflow stream")
			}
			return
		}
		h.deliver(p, b)
	}
}

func isEnd(err error) bool {
	var se *webtransport.SessionError
	return errors.Is(err, net.ErrClosed) || errors.As(err, &se) || errors.Is(err, context.Canceled)
}

// addrOf is the AddrPort of a net.Addr (UDP or TCP), IPv4-mapped IPv6
// unmapped.
func addrOf(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch v := a.(type) {
	case *net.UDPAddr:
		ap = v.AddrPort()
	case *net.TCPAddr:
		ap = v.AddrPort()
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
