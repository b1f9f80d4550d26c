package netrig

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// packetPair is a datagram-preserving socket pair: the pipe owns one end as
// its device (as it owns a TUN), the test plays the kernel on the other.
func packetPair(t *testing.T) (dev int, kernel *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	kernel = os.NewFile(uintptr(fds[1]), "kernel")
	t.Cleanup(func() { kernel.Close() })
	return fds[0], kernel
}

func startPipe(t *testing.T, dev int, d direction) *pipe {
	t.Helper()
	p, err := newPipe(dev, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// readSeqs reads numbered packets until n arrived or the deadline passed.
func readSeqs(t *testing.T, f *os.File, n int, within time.Duration) (seqs []uint64, at []time.Time) {
	t.Helper()
	f.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 100)
	for len(seqs) < n {
		m, err := f.Read(buf)
		if err != nil {
			break
		}
		seqs = append(seqs, binary.BigEndian.Uint64(buf[:m]))
		at = append(at, time.Now())
	}
	return seqs, at
}

func sendSeq(t *testing.T, f *os.File, i uint64) time.Time {
	t.Helper()
	b := binary.BigEndian.AppendUint64(nil, i)
	now := time.Now()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return now
}

func TestPipeHoldsPacketsForTheirDelayInOrder(t *testing.T) {
	dev, kernel := packetPair(t)
	p := startPipe(t, dev, direction{delay: 50 * time.Millisecond, jitter: 20 * time.Millisecond})
	var sent []time.Time
	for i := range 50 {
		sent = append(sent, sendSeq(t, kernel, uint64(i)))
		time.Sleep(time.Millisecond)
	}
	seqs, at := readSeqs(t, kernel, 50, 10*time.Second)
	if len(seqs) != 50 {
		t.Fatalf("%d of 50 packets came back", len(seqs))
	}
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("packet %d came back as number %d: jitter reordered them", i, s)
		}
		// Timers never fire early: a packet is never back before the low
		// end of its delay.
		if held := at[i].Sub(sent[i]); held < 30*time.Millisecond {
			t.Errorf("packet %d back after %v, before 50-20 ms", i, held)
		}
	}
	p.close()
	if st := p.stats.snapshot(); st.Packets != 50 || st.Delivered != 50 {
		t.Errorf("stats %+v, want 50 in and out", st)
	}
}

func TestPipeOutageDropsHeldAndNewPackets(t *testing.T) {
	dev, kernel := packetPair(t)
	p := startPipe(t, dev, direction{delay: 100 * time.Millisecond})
	sendSeq(t, kernel, 1) // held when the outage starts: due inside it
	time.Sleep(10 * time.Millisecond)
	p.outage(time.Now().Add(300 * time.Millisecond))
	sendSeq(t, kernel, 2) // enters during the outage
	time.Sleep(400 * time.Millisecond)
	sendSeq(t, kernel, 3) // after it
	seqs, _ := readSeqs(t, kernel, 1, 5*time.Second)
	if len(seqs) != 1 || seqs[0] != 3 {
		t.Fatalf("came back %v, want only packet 3", seqs)
	}
	p.close()
	if st := p.stats.snapshot(); st.OutageDrops != 2 {
		t.Errorf("outage drops %d, want 2 (%+v)", st.OutageDrops, st)
	}
}

func TestPipeWithoutDelayPassesAtOnceAndDuplicates(t *testing.T) {
	dev, kernel := packetPair(t)
	p := startPipe(t, dev, direction{duplicate: 1})
	sendSeq(t, kernel, 7)
	seqs, _ := readSeqs(t, kernel, 2, 5*time.Second)
	if len(seqs) != 2 || seqs[0] != 7 || seqs[1] != 7 {
		t.Fatalf("came back %v, want 7 twice", seqs)
	}
	p.setDirection(direction{loss: 1})
	sendSeq(t, kernel, 8)
	if seqs, _ := readSeqs(t, kernel, 1, 200*time.Millisecond); len(seqs) != 0 {
		t.Fatalf("a profile of 100%% loss passed %v", seqs)
	}
	p.close()
	if st := p.stats.snapshot(); st.Lost != 1 || st.Duplicated != 1 || st.Delivered != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestForwarderThreadOutlivesItsGoroutine: a forwarder's thread goes back to
// the runtime when the forwarder ends. A thread that ended would fire the
// Pdeathsig of every child process the runtime had forked from it (a test's
// PostgreSQL cluster, a rig's server), in the middle of later tests.
func TestForwarderThreadOutlivesItsGoroutine(t *testing.T) {
	tids := make(chan int, 1)
	var tid int
	// Locked, the caller keeps its thread: the goroutine gets another.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 100 {
		go func() {
			// The main thread never ends (the runtime parks it instead):
			// run the forwarder on another.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if unix.Gettid() == unix.Getpid() {
				tids <- 0
				return
			}
			defer forwarderThread()()
			tids <- unix.Gettid()
		}()
		if tid = <-tids; tid != 0 {
			break
		}
	}
	if tid == 0 {
		t.Fatal("no goroutine ran on a thread other than the main one")
	}
	time.Sleep(300 * time.Millisecond) // a thread's end would land by now
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err != nil {
		t.Fatalf("the forwarder's thread %d ended with it: %v", tid, err)
	}
}
