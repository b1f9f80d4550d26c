package tick

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// sliceSupported says whether setSlice can work here.
const sliceSupported = true

// setSlice asks the kernel (EEVDF, Linux 6.12 and later) for a requested
// slice of d for the calling thread, which must be locked to its goroutine,
// keeping its policy and nice value. A shorter slice gives the thread an
// earlier virtual deadline: waking, it preempts a running thread with a
// longer slice instead of waiting for it. Its CPU share is unchanged (that
// is the nice value's), and it needs no privilege.
//
// The thread is marked reset-on-fork, so that a process started from it (a
// plugin started on the game thread) begins with the default slice, not
// the game thread's. The returned reset restores the default slice; an
// unprivileged process may not clear the reset-on-fork mark, which then
// stays (it only resets a negative nice or a real-time policy in a child).
func setSlice(d time.Duration) (reset func() error, err error) {
	if err := checkSlice(d); err != nil {
		return nil, err
	}
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return nil, fmt.Errorf("sched_getattr: %w", err)
	}
	if old.Policy != unix.SCHED_NORMAL && old.Policy != unix.SCHED_BATCH {
		return nil, fmt.Errorf("the thread runs under scheduling policy %d, not the normal one", old.Policy)
	}
	attr := *old
	attr.Flags = unix.SCHED_FLAG_RESET_ON_FORK
	attr.Runtime = uint64(d)
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return nil, fmt.Errorf("sched_setattr: %w", err)
	}
	reset = func() error {
		attr.Runtime = 0 // the kernel's default slice
		attr.Flags = old.Flags & unix.SCHED_FLAG_RESET_ON_FORK
		err := unix.SchedSetAttr(0, &attr, 0)
		if errors.Is(err, unix.EPERM) {
			attr.Flags = unix.SCHED_FLAG_RESET_ON_FORK
			err = unix.SchedSetAttr(0, &attr, 0)
		}
		return err
	}
	// A kernel before 6.12 takes sched_runtime for a normal thread and
	// ignores it.
	if now, err := unix.SchedGetAttr(0, 0); err != nil || now.Runtime != uint64(d) {
		reset()
		return nil, errors.New("this kernel takes no slice for a normal thread (Linux 6.12 or later does)")
	}
	return reset, nil
}
