package web

import (
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of what waits in a batchConn: past either, a writer waits for
// room, as a write to a full socket buffer waits.
const (
	batchQueuePackets = 1024
	batchQueueBytes   = 2 << 20
	// batchCloseWait bounds how long Close waits for the queued packets
	// (a connection's close among them) to leave.
	batchCloseWait = time.Second
)

// batchConn is the UDP socket under the QUIC transport. quic-go writes
// every connection's packets from that connection's own goroutine, one
// sendmsg each; batchConn queues them (WriteMsgUDP copies and returns) and
// one writer goroutine sends what queued meanwhile with one sendmmsg, in
// the order written. It stays what quic-go looks for in a socket
// (quic.OOBCapablePacketConn): reads, buffer sizes and socket options are
// the socket's own (recvmmsg, ECN, packet info, DF), and each packet keeps
// its control messages (ECN marks, GSO segment size, source address); a
// packet with a GSO segment size the kernel refuses is sent again as its
// segments, which is what quic-go does itself on a GSO error. A send error
// loses the packet (QUIC recovers) and is counted.
type batchConn struct {
	*net.UDPConn
	w *mmsgWriter // nil: one WriteMsgUDP per packet (no sendmmsg here)

	mu     sync.Mutex
	room   sync.Cond // broadcast when the queue was taken
	queue  []outPacket
	bytes  int
	closed bool
	wake   chan struct{}
	done   chan struct{} // closed when the writer returned

	// Packets and Batches count the packets sent and the system calls
	// that sent them; Errors the packets the kernel refused.
	Packets, Batches, Errors atomic.Uint64
}

// outPacket is one queued packet: the datagram, its control messages and
// its destination. buf holds both byte slices (pooled).
type outPacket struct {
	b, oob []byte
	addr   netip.AddrPort
	buf    *[]byte
}

// newBatchConn wraps uc and starts its writer.
func newBatchConn(uc *net.UDPConn) *batchConn {
	c := &batchConn{UDPConn: uc, w: newMMsgWriter(uc), wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.room.L = &c.mu
	go c.run()
	return c
}

// WriteMsgUDP queues b (with its control messages oob) for addr and
// returns: the packet is sent by the writer, with those others queued.
func (c *batchConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if addr == nil {
		return 0, 0, &net.OpError{Op: "write", Net: "udp", Err: net.ErrWriteToConnected}
	}
	p := outPacket{addr: addr.AddrPort()}
	p.buf = getPacketBuf(len(b) + len(oob))
	all := append(append((*p.buf)[:0], oob...), b...) // the control messages first: aligned
	p.oob, p.b = all[:len(oob)], all[len(oob):]
	c.mu.Lock()
	for !c.closed && (len(c.queue) >= batchQueuePackets || c.bytes >= batchQueueBytes) {
		c.room.Wait()
	}
	if c.closed {
		c.mu.Unlock()
		putPacketBuf(p.buf)
		return 0, 0, &net.OpError{Op: "write", Net: "udp", Err: net.ErrClosed}
	}
	c.queue = append(c.queue, p)
	c.bytes += len(all)
	first := len(c.queue) == 1
	c.mu.Unlock()
	if first {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return len(b), len(oob), nil
}

// run is the writer: woken by the first packet of a burst, it first lets
// the other goroutines that are ready (the connections writing theirs) run,
// then sends all that queued.
func (c *batchConn) run() {
	defer close(c.done)
	var batch []outPacket
	for range c.wake {
		runtime.Gosched()
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.bytes = 0
		closed := c.closed
		c.room.Broadcast()
		c.mu.Unlock()
		c.send(batch)
		for i := range batch {
			putPacketBuf(batch[i].buf)
			batch[i] = outPacket{}
		}
		if closed {
			return
		}
	}
}

func (c *batchConn) send(batch []outPacket) {
	if len(batch) == 0 {
		return
	}
	if c.w == nil {
		for i := range batch {
			c.sendOne(&batch[i])
		}
		return
	}
	c.w.write(c, batch)
}

// sendOne writes one packet with the socket's own WriteMsgUDP.
func (c *batchConn) sendOne(p *outPacket) {
	c.Batches.Add(1)
	if _, _, err := c.UDPConn.WriteMsgUDPAddrPort(p.b, p.oob, p.addr); err != nil {
		c.Errors.Add(1)
		return
	}
	c.Packets.Add(1)
}

// Close sends what is queued (a connection's close among it; for at most
// batchCloseWait), then closes the socket.
func (c *batchConn) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.room.Broadcast()
	c.mu.Unlock()
	if !already {
		_ = c.UDPConn.SetWriteDeadline(time.Now().Add(batchCloseWait))
		c.wake <- struct{}{} // the writer reads wake until it sees closed
		<-c.done
	}
	return c.UDPConn.Close()
}

// packetPool holds buffers of a full-size QUIC packet and its control
// messages.
var packetPool = sync.Pool{New: func() any { b := make([]byte, 0, 1600); return &b }}

func getPacketBuf(n int) *[]byte {
	if n > 1600 {
		b := make([]byte, 0, n)
		return &b
	}
	return packetPool.Get().(*[]byte)
}

func putPacketBuf(b *[]byte) {
	if cap(*b) == 1600 {
		packetPool.Put(b)
	}
}
