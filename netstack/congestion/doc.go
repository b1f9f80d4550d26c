// Package congestion estimates what a path to one peer carries and paces a
// session's sending to it: the send rate that fits the link.
//
// It learns from BBR's delivery-rate sampling (a rate is what was sent
// between two delivery markers over the longer of the time it took to send
// it and the time it took to be acknowledged) and from GameNetworkingSockets'
// send-rate design (a token bucket that paces what leaves, and a game that
// is told its rate so that it sends less rather than have the transport
// queue it). It needs no new wire message: the markers are the session's
// heartbeat probes, which every peer of protocol v3 and v4 echoes at once
// (docs/protocol.md §5.4); the estimator sends them more often than the
// liveness heartbeat needs while a session sends (Estimator.ProbeDue).
//
// Game traffic is application-limited almost always: a server sends what
// its tick produces, far below the link, and a delivery-rate sample then
// measures the game, not the link. So the estimate is a windowed maximum of
// the samples, and until the path first shows a queue the pacer allows
// twice the estimate (at least the initial rate), which leaves the game
// room to grow. A queue shows as the smallest recent round trip exceeding
// the path's minimum by more than its jitter (the variation between
// consecutive samples, which a queue's slow growth hardly adds to): the
// pacer then cruises at nine tenths of the estimate, probing at 1.25 times
// it one round trip in six (BBR's gain cycle, kept under one on average so
// that the bottleneck's queue empties rather than sits), and past twice
// the jitter it cuts by what drains the excess within a round trip, at
// once. The bottleneck's queue is bounded too: state waits while what was
// sent since the newest echoed marker left, less what the estimate carried
// since, plus the queue that marker met, passes 60 ms at the estimate —
// reckoned from send times, which carry no jitter, so the queue stays short
// whatever the rate's error. Cruising, probing and the queue bound apply
// to a sender that has more than the pacer lets out; one that has sent all
// it had for a round trip (application-limited: its estimate is its own
// rate) is paced as it was, five percent more a round up to a tenth over
// the estimate, or twice it when it sends under half of it — unless the
// bandwidth window holds a sample taken while the pacer held it (every
// flush of the sample's interval left state waiting): that estimate is the
// link's, and a game that wants more than its link has spells of sending
// all it has between its backlogs, whose next burst would otherwise meet
// twice the link's rate and no bound. A start with
// more to send grows a quarter a round and ends when the estimate stops
// growing for three rounds (BBR's startup), before a queue would show:
// sessions of a match start together and would fill it together. Markers that go
// unanswered for two round trips (at least two seconds) are the strongest
// sign (a full bottleneck drops them too): the rate halves each round trip
// until one comes back.
//
// A rate sample spans from the newest echoed marker sent at least sixteen
// times the jitter earlier (at least 100 ms, at most a second): over a
// short span the round trips' spread shortens an echo spacing as much as a
// queue lengthens it, and the windowed maximum then read the sender's rate
// as the link's (40 kB/s on a 32 kB/s link with 300±80 ms round trips).
// It gives a sample only when every marker between was echoed and neither
// end waited in a long queue, since a bottleneck that drops makes what was
// sent differ from what was delivered.
//
// The bytes counted are what the bottleneck counts: the session adds each
// datagram's IP and UDP headers to its payload.
//
// Everything is pure and takes the time as an argument: the tests run it
// on virtual time. An Estimator and a Pacer belong to one session and are
// used under its lock.
package congestion
