package reliable

import "time"

// Resume makes the Endpoint of a session whose path went dark carry on over
// a new path (a resumed session, docs/protocol.md §3.15): the sequences, the
// messages in flight and queued, the receive window, the ordered channel
// and the messages in reassembly are kept as they are; what the outage
// spoiled starts over. A delivery failure (the peer acknowledged nothing
// for too long) is forgotten; every packet in flight is due for
// retransmission at once, with a fresh retransmission count and connection
// deadline, and is not a probe (the new path has just proved the peer
// alive); the RTT estimate starts from the initial RTO; reassembly timers
// restart, so that the outage does not abandon a message whose fragments
// the peer is about to resend. It returns ErrClosed for a closed Endpoint,
// which cannot resume.
func (e *Endpoint) Resume(now time.Time) error {
	if e.failErr == ErrClosed {
		return ErrClosed
	}
	e.failErr = nil
	t := e.since(now)
	for s := e.oldest; s != e.firstUnsent; s++ {
		if p := e.slot(s); p.state == outSent {
			p.firstSent, p.due, p.retx, p.last = t, t, 0, false
		}
	}
	e.ackedTx = e.txCount // every transmission so far counts as heard: no probing
	e.silentRounds, e.probeDue, e.deferred = 0, 0, false
	e.rtt = newRTTEstimator()
	e.timerDue = t
	for _, p := range e.partials {
		p.last = t
	}
	if len(e.partials) > 0 {
		e.partialDue = t + e.cfg.ReassemblyTimeout
	}
	return nil
}
