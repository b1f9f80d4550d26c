package memlink

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

func read(t *testing.T, c *Conn) ([]byte, net.Addr) {
	t.Helper()
	buf := make([]byte, 2048)
	n, from, err := c.ReadFrom(buf)
	if err != nil {
		t.Fatalf("ReadFrom: %v", err)
	}
	return buf[:n], from
}

func TestDeliversACopyWithSourceAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pair(1, Link{}, Link{})
		defer a.Close()
		defer b.Close()
		msg := []byte("hello")
		if _, err := a.WriteTo(msg, b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		copy(msg, "XXXXX") // the network must not alias the writer's buffer
		got, from := read(t, b)
		if string(got) != "hello" {
			t.Errorf("got %q", got)
		}
		if from.String() != "127.0.0.1:27015" || b.LocalAddr().String() != "127.0.0.2:50000" {
			t.Errorf("from %v, local %v", from, b.LocalAddr())
		}
		short := make([]byte, 3)
		a.WriteTo([]byte("truncated"), b.LocalAddr())
		if n, _, _ := b.ReadFrom(short); n != 3 || string(short) != "tru" {
			t.Errorf("truncation: n=%d %q", n, short)
		}
	})
}

func TestLatencyAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pair(7, Link{Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}, Link{})
		defer a.Close()
		defer b.Close()
		start := time.Now()
		const n = 200
		for i := range n {
			a.WriteTo(binary.LittleEndian.AppendUint32(nil, uint32(i)), b.LocalAddr())
		}
		reordered := false
		prev := -1
		for range n {
			p, _ := read(t, b)
			if d := time.Since(start); d < 50*time.Millisecond || d > 150*time.Millisecond {
				t.Fatalf("arrival after %v, outside 100±50 ms", d)
			}
			i := int(binary.LittleEndian.Uint32(p))
			if i < prev {
				reordered = true
			}
			prev = i
		}
		if !reordered {
			t.Error("jitter did not reorder 200 simultaneous datagrams")
		}
	})
}

func TestLossAndDuplicationRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Config{Seed: 3, QueueLen: 50000, Default: Link{Loss: 0.25, Duplicate: 0.25}})
		a, _ := n.Attach(Addr(1, 1000))
		b, _ := n.Attach(Addr(2, 2000))
		defer a.Close()
		defer b.Close()
		const sent = 20000
		for range sent {
			a.WriteToUDPAddrPort([]byte{1}, b.AddrPort())
		}
		s := n.Stats()
		if s.Lost < sent*23/100 || s.Lost > sent*27/100 {
			t.Errorf("lost %d of %d, want ≈25%%", s.Lost, sent)
		}
		if kept := sent - s.Lost; s.Duplicated < kept*23/100 || s.Duplicated > kept*27/100 {
			t.Errorf("duplicated %d of %d, want ≈25%%", s.Duplicated, kept)
		}
		if s.Delivered != sent-s.Lost+s.Duplicated || s.QueueDrops != 0 {
			t.Errorf("stats %+v inconsistent", s)
		}
	})
}

// TestSeedReproduces: the same seed gives the same losses and arrival order.
func TestSeedReproduces(t *testing.T) {
	run := func(seed uint64) []uint32 {
		var got []uint32
		synctest.Test(t, func(t *testing.T) {
			l := Link{Loss: 0.3, Duplicate: 0.3, Latency: 50 * time.Millisecond, Jitter: 40 * time.Millisecond}
			a, b := Pair(seed, l, l)
			defer a.Close()
			defer b.Close()
			for i := range 300 {
				a.WriteTo(binary.LittleEndian.AppendUint32(nil, uint32(i)), b.LocalAddr())
			}
			b.SetReadDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 4)
			for {
				if _, _, err := b.ReadFrom(buf); err != nil {
					return
				}
				got = append(got, binary.LittleEndian.Uint32(buf))
			}
		})
		return got
	}
	x, y, z := run(11), run(11), run(12)
	if len(x) == 0 || len(x) != len(y) {
		t.Fatalf("lengths %d %d", len(x), len(y))
	}
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("runs with one seed differ at %d", i)
		}
	}
	same := len(x) == len(z)
	for i := 0; same && i < len(x); i++ {
		same = x[i] == z[i]
	}
	if same {
		t.Error("different seeds gave identical runs")
	}
}

func TestReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pair(1, Link{}, Link{})
		defer a.Close()
		defer b.Close()
		start := time.Now()
		b.SetReadDeadline(start.Add(time.Second))
		_, _, err := b.ReadFrom(make([]byte, 10))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("err %v, want a timeout", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("timed out after %v, want 1s", d)
		}
		// A deadline set while a reader is blocked takes effect.
		b.SetReadDeadline(time.Time{})
		go func() {
			time.Sleep(10 * time.Millisecond)
			b.SetReadDeadline(time.Now().Add(40 * time.Millisecond))
		}()
		start = time.Now()
		if _, _, err := b.ReadFrom(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("re-armed deadline fired after %v, want 50ms", d)
		}
	})
}

func TestCloseUnblocksReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pair(1, Link{Latency: time.Second}, Link{})
		done := make(chan error)
		go func() {
			_, _, err := b.ReadFrom(make([]byte, 10))
			done <- err
		}()
		a.WriteTo([]byte("late"), b.LocalAddr()) // arrives after Close: unroutable
		time.Sleep(10 * time.Millisecond)
		b.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked reader got %v, want net.ErrClosed", err)
		}
		if _, err := b.WriteTo([]byte("x"), a.LocalAddr()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("write after close: %v", err)
		}
		if err := b.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second Close: %v", err)
		}
		time.Sleep(2 * time.Second)
		if s := a.Network().Stats(); s.Unroutable != 1 {
			t.Errorf("unroutable %d, want 1", s.Unroutable)
		}
		a.Close()
	})
}

func TestFullQueueDropsAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Config{QueueLen: 4})
		a, _ := n.Attach(Addr(1, 1))
		b, _ := n.Attach(Addr(2, 2))
		defer a.Close()
		defer b.Close()
		for range 10 {
			a.WriteToUDPAddrPort([]byte("x"), b.AddrPort())
		}
		if b.QueueDrops() != 6 || n.Stats().QueueDrops != 6 || n.Stats().Delivered != 4 {
			t.Errorf("queue drops %d, stats %+v", b.QueueDrops(), n.Stats())
		}
		if _, err := n.Attach(Addr(2, 2)); !errors.Is(err, ErrAddrInUse) {
			t.Errorf("double attach: %v", err)
		}
	})
}

// TestServerWithSeveralClients: replies addressed by ReadFrom's source reach
// the right client.
func TestServerWithSeveralClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Config{Seed: 5, Default: Link{Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}})
		srv, _ := n.Attach(Addr(1, 27015))
		defer srv.Close()
		go func() {
			buf := make([]byte, 100)
			for {
				k, from, err := srv.ReadFrom(buf)
				if err != nil {
					return
				}
				srv.WriteTo(append([]byte("echo:"), buf[:k]...), from)
			}
		}()
		for i := byte(2); i < 6; i++ {
			c, err := n.Attach(Addr(i, 40000+uint16(i)))
			if err != nil {
				t.Fatal(err)
			}
			c.WriteTo([]byte{'0' + i}, srv.LocalAddr())
			if got, _ := read(t, c); string(got) != "echo:"+string(rune('0'+i)) {
				t.Errorf("client %d got %q", i, got)
			}
			c.Close()
		}
	})
}

// TestJitterFreeLinkKeepsOrder: datagrams sent at one instant over a link
// without jitter arrive in send order (timers expiring together fire in no
// fixed order, so the path must queue them itself).
func TestJitterFreeLinkKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := Pair(1, Link{Latency: 10 * time.Millisecond}, Link{})
		for i := range 200 {
			if _, err := a.WriteToUDPAddrPort([]byte{byte(i)}, b.AddrPort()); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 8)
		for i := range 200 {
			n, _, err := b.ReadFromUDPAddrPort(buf)
			if err != nil || n != 1 || buf[0] != byte(i) {
				t.Fatalf("datagram %d: got %v (n=%d, err=%v)", i, buf[0], n, err)
			}
		}
	})
}
