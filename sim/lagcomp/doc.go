// Package lagcomp owns lag compensation for hitscan weapons: a History of
// every entity's axis-aligned box, recorded once per tick over a bounded
// window (1 s by default), rewound to a past server time with linear
// interpolation between the two snapshots that bracket it, and a Raycast
// against the rewound boxes that returns the first entity hit and where.
//
// Time is server time as a time.Duration since any fixed origin (the server's
// start, say); snapshots must be recorded at strictly increasing times.
// RewindTime turns a shot into the time to rewind to.
//
// It must never rewind further than its window or into the future (those
// shots are refused with ErrTooOld and ErrFuture, so a client cannot buy a
// longer rewind with a forged latency), never panic on NaN, infinite or huge
// inputs (they are refused), and never allocate in Record, Rewind (with a
// reused destination) or Raycast once the ring has grown to the entity count.
// A History is not safe for concurrent use: it belongs to the game thread.
package lagcomp
