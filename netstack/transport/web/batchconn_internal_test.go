//go:build linux

package web

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// listenLoop is a UDP socket on 127.0.0.1 that receives IP TOS bytes.
func listenLoop(t *testing.T) *net.UDPConn {
	t.Helper()
	uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	rc, _ := uc.SyscallConn()
	_ = rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1) })
	_ = uc.SetReadBuffer(4 << 20)
	return uc
}

type received struct {
	b   []byte
	tos int // -1: no TOS control message
}

// receive reads n datagrams (or until 10 s pass).
func receive(t *testing.T, uc *net.UDPConn, n int) []received {
	t.Helper()
	var out []received
	_ = uc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, oob := make([]byte, 2048), make([]byte, 128)
	for len(out) < n {
		k, oobn, _, _, err := uc.ReadMsgUDP(buf, oob)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(out), n, err)
		}
		r := received{b: append([]byte(nil), buf[:k]...), tos: -1}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) > 0 {
				r.tos = int(m.Data[0])
			}
		}
		out = append(out, r)
	}
	return out
}

// cmsg is one control message, as quic-go writes them.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func newTestBatchConn(t *testing.T) *batchConn {
	t.Helper()
	uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("[::]:0")))
	if err != nil {
		t.Fatal(err)
	}
	c := newBatchConn(uc)
	if c.w == nil {
		t.Fatal("no sendmmsg writer on Linux")
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBatchConnSendsInOrder: what several goroutines write arrives, each
// writer's datagrams in the order written, in fewer system calls than
// datagrams or as many; the writers' buffers are theirs again at return.
func TestBatchConnSendsInOrder(t *testing.T) {
	c, dst := newTestBatchConn(t), listenLoop(t)
	to := dst.LocalAddr().(*net.UDPAddr)
	const writers, each = 4, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			b := make([]byte, 8)
			for i := range each {
				binary.BigEndian.PutUint32(b, uint32(w))
				binary.BigEndian.PutUint32(b[4:], uint32(i))
				if _, _, err := c.WriteMsgUDP(b, nil, to); err != nil {
					t.Error(err)
					return
				}
				clear(b) // the conn copied it
			}
		})
	}
	got := receive(t, dst, writers*each)
	wg.Wait()
	next := make([]uint32, writers)
	for _, r := range got {
		w, i := binary.BigEndian.Uint32(r.b), binary.BigEndian.Uint32(r.b[4:])
		if w >= writers || i != next[w] {
			t.Fatalf("datagram (writer %d, #%d); want writer's #%d next", w, i, next[w])
		}
		next[w]++
	}
	if p, b := c.Packets.Load(), c.Batches.Load(); p != writers*each || b > p || c.Errors.Load() != 0 {
		t.Fatalf("%d packets in %d system calls, %d errors", p, b, c.Errors.Load())
	}
}

// TestBatchConnKeepsControlMessages: a packet's ECN mark (IP_TOS) arrives
// with it; one written with a GSO segment size arrives as its segments.
func TestBatchConnKeepsControlMessages(t *testing.T) {
	c, dst := newTestBatchConn(t), listenLoop(t)
	to := dst.LocalAddr().(*net.UDPAddr)
	tos := cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0x02}) // ECT(0)
	if _, _, err := c.WriteMsgUDP([]byte("marked"), tos, to); err != nil {
		t.Fatal(err)
	}
	seg := make([]byte, 2)
	*(*uint16)(unsafe.Pointer(&seg[0])) = 4
	if _, _, err := c.WriteMsgUDP([]byte("aaaabbbbcc"), cmsg(unix.IPPROTO_UDP, unix.UDP_SEGMENT, seg), to); err != nil {
		t.Fatal(err)
	}
	got := receive(t, dst, 4)
	if string(got[0].b) != "marked" || got[0].tos&3 != 2 {
		t.Fatalf("first datagram %q with TOS %d; want \"marked\" with ECT(0)", got[0].b, got[0].tos)
	}
	for i, want := range []string{"aaaa", "bbbb", "cc"} {
		if string(got[i+1].b) != want {
			t.Fatalf("segment %d = %q, want %q", i, got[i+1].b, want)
		}
	}
}

// TestBatchConnSplitsRefusedSegments: without its GSO control message a
// refused packet's segments are sent one by one (what the kernel of a
// device without GSO needs).
func TestBatchConnSplitsRefusedSegments(t *testing.T) {
	c, dst := newTestBatchConn(t), listenLoop(t)
	tos := cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0x01})
	seg := make([]byte, 2)
	*(*uint16)(unsafe.Pointer(&seg[0])) = 3
	oob := append(tos, cmsg(unix.IPPROTO_UDP, unix.UDP_SEGMENT, seg)...)
	p := outPacket{b: []byte("xxxyyyz"), oob: oob, addr: dst.LocalAddr().(*net.UDPAddr).AddrPort()}
	c.refused(&p, unix.EIO)
	got := receive(t, dst, 3)
	for i, want := range []string{"xxx", "yyy", "z"} {
		if string(got[i].b) != want || got[i].tos&3 != 1 {
			t.Fatalf("datagram %d = %q TOS %d, want %q with ECT(1)", i, got[i].b, got[i].tos, want)
		}
	}
}

// TestBatchConnClose: what was queued before Close is sent; a write after
// it fails.
func TestBatchConnClose(t *testing.T) {
	c, dst := newTestBatchConn(t), listenLoop(t)
	to := dst.LocalAddr().(*net.UDPAddr)
	for range 10 {
		if _, _, err := c.WriteMsgUDP([]byte("last"), nil, to); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	receive(t, dst, 10)
	if _, _, err := c.WriteMsgUDP([]byte("late"), nil, to); err == nil {
		t.Fatal("a write after Close succeeded")
	}
}
