package netrig

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxHeld bounds the packets one direction holds at once: beyond it a
// packet is dropped and counted as overflow (50 000 packets is 4 s of a
// saturated 100 Mbit/s stream at 1 kB).
const maxHeld = 50_000

// DirStats counts what one direction of a client's link did.
type DirStats struct {
	Packets     uint64 // read from the kernel
	Delivered   uint64 // written back (duplicates included)
	Lost        uint64 // dropped by the profile's loss
	OutageDrops uint64 // dropped by an outage
	Duplicated  uint64
	Reordered   uint64
	Overflow    uint64 // dropped because maxHeld packets were held
	WriteErrors uint64
	// Late counts the held packets by how late the forwarder wrote them
	// after their due time: what the rig's own timing adds to a profile.
	Late Lateness
}

// Lateness counts packets by how late they were delivered: under 0.1 ms,
// 0.1 to 1 ms, 1 to 5 ms, 5 to 20 ms, and 20 ms or more.
type Lateness [5]uint64

var latenessBounds = [4]time.Duration{100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}

func latenessBucket(d time.Duration) int {
	for i, b := range latenessBounds {
		if d < b {
			return i
		}
	}
	return len(latenessBounds)
}

// String is "n held: 97.0% <0.1ms, 2.1% <1ms, 0.8% <5ms, 0.1% <20ms, 0.0% ≥20ms".
func (l Lateness) String() string {
	var n uint64
	for _, c := range l {
		n += c
	}
	if n == 0 {
		return "none held"
	}
	pc := func(c uint64) float64 { return 100 * float64(c) / float64(n) }
	return fmt.Sprintf("%d held: %.1f%% <0.1ms, %.1f%% <1ms, %.1f%% <5ms, %.1f%% <20ms, %.1f%% ≥20ms",
		n, pc(l[0]), pc(l[1]), pc(l[2]), pc(l[3]), pc(l[4]))
}

type dirCounters struct {
	packets, delivered, lost, outage, duplicated, reordered, overflow, writeErrors atomic.Uint64
	late                                                                           [len(Lateness{})]atomic.Uint64
}

func (c *dirCounters) snapshot() DirStats {
	return DirStats{
		Packets: c.packets.Load(), Delivered: c.delivered.Load(), Lost: c.lost.Load(),
		OutageDrops: c.outage.Load(), Duplicated: c.duplicated.Load(), Reordered: c.reordered.Load(),
		Overflow: c.overflow.Load(), WriteErrors: c.writeErrors.Load(),
		Late: Lateness{c.late[0].Load(), c.late[1].Load(), c.late[2].Load(), c.late[3].Load(), c.late[4].Load()},
	}
}

// pipe is one direction's forwarder: it reads IP packets from a device (a
// TUN), asks the shaper for each one's fate, holds them in a due-time heap
// and writes them back to the same device when due.
//
// Its two threads (a reader and a writer) are OS threads of their own,
// locked and never returned to the runtime, that ask for real-time
// scheduling and sleep in ppoll (nanosecond timeouts, no runtime timer or
// poller in the way), so that a loaded machine delays a held packet as
// little as it can. Eventfds wake them: kick when a packet becomes the
// first due, stop when the pipe closes. mu guards the shaper, the heap and
// writing.
type pipe struct {
	fd    int // the device; the pipe closes it
	kick  int // eventfd: a new first packet is held
	stop  int // eventfd: written once, on close
	stats dirCounters
	wg    sync.WaitGroup
	once  sync.Once

	mu      sync.Mutex
	sh      *shaper
	held    heldHeap
	bufs    bufferPool
	seq     uint64
	writing bool // the writer popped a packet and is writing it
}

// newPipe starts a forwarder on fd, a non-blocking packet device.
func newPipe(fd int, d direction, seed uint64) (*pipe, error) {
	kick, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("netrig: eventfd: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(kick)
		return nil, fmt.Errorf("netrig: eventfd: %w", err)
	}
	p := &pipe{fd: fd, kick: kick, stop: stop, sh: newShaper(d, seed)}
	p.wg.Add(2)
	go p.readLoop()
	go p.writeLoop()
	return p, nil
}

// close stops both threads and closes the device; once it returns, the
// stats are final. It may be called more than once.
func (p *pipe) close() {
	p.once.Do(func() {
		signal(p.stop)
		p.wg.Wait()
		unix.Close(p.fd)
		unix.Close(p.kick)
		unix.Close(p.stop)
	})
}

func signal(efd int) {
	var one [8]byte // an eventfd adds a host-endian uint64
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(efd, one[:])
}

func (p *pipe) setDirection(d direction) {
	p.mu.Lock()
	p.sh.d = d
	p.mu.Unlock()
}

func (p *pipe) outage(until time.Time) {
	p.mu.Lock()
	p.sh.outageUntil = until
	p.mu.Unlock()
}

// forwarderThread locks the calling goroutine to its thread and asks for
// real-time scheduling, which root gets. The returned release puts the
// thread back to ordinary scheduling and unlocks it, so that a real-time
// thread never runs other goroutines and yet the thread does not end: a
// child process started with Pdeathsig from a thread is killed when that
// thread ends (not when the process does), and the runtime may have forked
// a test's PostgreSQL or server from this very thread earlier. Only when
// the reset fails does the goroutine end locked, taking the thread with it.
func forwarderThread() (release func()) {
	runtime.LockOSThread()
	unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: rtPriority}, 0)
	return func() {
		if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0) == nil {
			runtime.UnlockOSThread()
		}
	}
}

// rtPriority is low among real-time priorities: above every ordinary
// thread, below the kernel's own.
const rtPriority = 10

// ppoll waits for fds, or for timeout when positive; EINTR is a return.
func ppoll(fds []unix.PollFd, timeout time.Duration) {
	var ts *unix.Timespec
	if timeout > 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	unix.Ppoll(fds, ts, nil)
}

func (p *pipe) readLoop() {
	defer p.wg.Done()
	defer forwarderThread()()
	buf := make([]byte, 65536)
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}, {Fd: int32(p.stop), Events: unix.POLLIN}}
	for {
		ppoll(fds, 0)
		if fds[1].Revents != 0 {
			return
		}
		for {
			n, err := unix.Read(p.fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			p.admit(buf[:n])
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return // the device went away
		}
	}
}

// admit decides one packet and either writes it at once (nothing held, due
// now: the None profile's fast path) or holds it.
func (p *pipe) admit(pkt []byte) {
	p.stats.packets.Add(1)
	now := time.Now()
	p.mu.Lock()
	v, due, dup, reordered := p.sh.admit(now)
	switch v {
	case lostByOutage:
		p.mu.Unlock()
		p.stats.outage.Add(1)
		return
	case lostByProfile:
		p.mu.Unlock()
		p.stats.lost.Add(1)
		return
	}
	if reordered {
		p.stats.reordered.Add(1)
	}
	copies := 1
	if dup {
		copies = 2
		p.stats.duplicated.Add(1)
	}
	if !due.After(now) && len(p.held) == 0 && !p.writing {
		p.mu.Unlock()
		for range copies {
			p.write(pkt)
		}
		return
	}
	first := false
	for range copies {
		if len(p.held) >= maxHeld {
			p.stats.overflow.Add(1)
			continue
		}
		p.seq++
		p.held.push(heldPacket{due: due, seq: p.seq, pkt: append(p.bufs.get(len(pkt)), pkt...)})
		first = first || p.held[0].seq == p.seq
	}
	p.mu.Unlock()
	if first {
		// The writer may be asleep until a later packet's due time.
		signal(p.kick)
	}
}

func (p *pipe) write(pkt []byte) {
	for {
		_, err := unix.Write(p.fd, pkt)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			p.stats.writeErrors.Add(1)
			return
		}
		p.stats.delivered.Add(1)
		return
	}
}

func (p *pipe) writeLoop() {
	defer p.wg.Done()
	defer forwarderThread()()
	fds := []unix.PollFd{{Fd: int32(p.kick), Events: unix.POLLIN}, {Fd: int32(p.stop), Events: unix.POLLIN}}
	var drain [8]byte
	for {
		pkt, late, wait := p.next()
		if pkt != nil {
			p.stats.late[latenessBucket(late)].Add(1)
			p.write(pkt)
			p.mu.Lock()
			p.writing = false
			p.bufs.put(pkt)
			p.mu.Unlock()
			continue
		}
		ppoll(fds, wait)
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents != 0 {
			unix.Read(p.kick, drain[:])
		}
	}
}

// next pops the first due packet (marking a write in progress) and says how
// late it is, or says how long until one is due (0: nothing held). A packet
// due during an outage is dropped: nothing of the client crosses the router
// while it is down.
func (p *pipe) next() (pkt []byte, late, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.held) > 0 {
		now := time.Now()
		first := p.held[0]
		if first.due.After(now) {
			return nil, 0, first.due.Sub(now)
		}
		p.held.pop()
		if p.sh.down(now) {
			p.stats.outage.Add(1)
			p.bufs.put(first.pkt)
			continue
		}
		p.writing = true
		return first.pkt, now.Sub(first.due), 0
	}
	return nil, 0, 0
}
