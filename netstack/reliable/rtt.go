package reliable

import "time"

// rttEstimator is RFC 6298's SRTT/RTTVAR with §7's clamps. Samples come only
// from packets that were never retransmitted (Karn), with the peer's reported
// ack delay subtracted; the caller enforces Karn's rule.
type rttEstimator struct {
	srtt, rttvar, rto time.Duration
	samples           uint64
}

func newRTTEstimator() rttEstimator { return rttEstimator{rto: InitialRTO} }

// sample feeds one measurement: measured is ack arrival minus first send, and
// ackDelay the peer's reported hold time. A delay not smaller than the
// measurement (coarse millisecond rounding, or a peer lying to shrink our RTO)
// is ignored, which keeps the sample conservative rather than zero. A delay
// above MaxAckDelay counts for MaxAckDelay only (as QUIC caps it at
// max_ack_delay): a peer that holds its Acks longer than §7's 33 ms is a
// slow peer — one starved of CPU, say — and that lateness is part of the
// round trip its sender must wait for, or every packet is resent
// spuriously and the peer falls further behind.
func (r *rttEstimator) sample(measured, ackDelay time.Duration) {
	if measured < 0 {
		return
	}
	ackDelay = min(ackDelay, MaxAckDelay)
	rtt := measured
	if ackDelay > 0 && ackDelay < measured {
		rtt -= ackDelay
	}
	if r.samples == 0 {
		r.srtt = rtt
		r.rttvar = rtt / 2
	} else {
		// RFC 6298 §2.3: RTTVAR is updated with the old SRTT, then SRTT.
		diff := r.srtt - rtt
		if diff < 0 {
			diff = -diff
		}
		r.rttvar = (3*r.rttvar + diff) / 4
		r.srtt = (7*r.srtt + rtt) / 8
	}
	r.samples++
	r.rto = min(max(r.srtt+4*r.rttvar, MinRTO), MaxRTO)
}

// backoff returns the wait after the k-th transmission's send (k = 0 for the
// original): RTO·min(2^k, 8).
func backoff(rto time.Duration, k int) time.Duration {
	if k >= 3 {
		return 8 * rto
	}
	return rto << k
}
