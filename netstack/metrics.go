package netstack

import (
	"sync/atomic"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// CounterSample is one server-wide counter as an exporter sees it: a
// Prometheus-style family name (without the exporter's prefix), an optional
// label that splits the family (reason="security"), and its value. Labels
// come from fixed tables, never from peers, so their number is bounded.
type CounterSample struct {
	Family     string // e.g. "datagrams_dropped_total"
	Help       string // the family's meaning
	LabelName  string // "" for a family without labels
	LabelValue string
	Value      uint64
	// Gauge marks a value that goes up and down (the others only grow).
	Gauge bool
}

// counterTable lists every server-wide counter exporters see, in families.
// A counter added to Counters is exported by adding one line here.
var counterTable = []struct {
	family, help, label, value string
	get                        func(*Server) uint64
}{
	{"bytes_sent_total", "UDP payload bytes sent.", "", "", func(s *Server) uint64 { return s.ctr.BytesSent.Load() }},
	{"bytes_received_total", "UDP payload bytes received.", "", "", func(s *Server) uint64 { return s.ctr.BytesReceived.Load() }},
	{"datagrams_sent_total", "UDP datagrams sent.", "", "", func(s *Server) uint64 { return s.ctr.PacketsSent.Load() }},
	{"datagrams_received_total", "UDP datagrams received.", "", "", func(s *Server) uint64 { return s.ctr.PacketsReceived.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "security", func(s *Server) uint64 { return s.ctr.SecurityDrops.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "after_close", func(s *Server) uint64 { return s.ctr.LateFrames.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "plaintext", func(s *Server) uint64 { return s.ctr.PlaintextFramesDropped.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "malformed", func(s *Server) uint64 { return s.ctr.MalformedDropped.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "policy", func(s *Server) uint64 { return s.ctr.PolicyDrops.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "rate_limited", func(s *Server) uint64 { return s.ctr.ConnectRateLimited.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "other", otherDrops},
	{"datagrams_dropped_total", droppedHelp, "reason", "prefix_budget", func(s *Server) uint64 { return s.ctr.PrefixRateLimited.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "signature_budget", func(s *Server) uint64 { return s.ctr.HandshakeBudgetRefused.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "unvalidated_reply_budget", func(s *Server) uint64 { return s.ctr.UnvalidatedReplyRefused.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "unvalidated_refusal_budget", func(s *Server) uint64 { return s.ctr.UnvalidatedRefusalRefused.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "half_open_cap", func(s *Server) uint64 { return s.ctr.HalfOpenCapRefused.Load() }},
	{"datagrams_dropped_total", droppedHelp, "reason", "amplification", func(s *Server) uint64 { return s.ctr.AmplificationDropped.Load() }},
	{"plain_bytes_received_total", "Bytes of plain (handshake) datagrams received, after the endpoint policy.", "", "", func(s *Server) uint64 { return s.ctr.PlainBytesReceived.Load() }},
	{"plain_bytes_sent_total", "Bytes of plain (handshake) datagrams sent.", "", "", func(s *Server) uint64 { return s.ctr.PlainBytesSent.Load() }},
	{"retransmissions_total", "Reliable messages sent again after their retransmission timeout.", "", "", func(s *Server) uint64 { return s.ctr.Retransmissions.Load() }},
	{"inbox_drops_total", "Messages dropped because a module's inbox was full.", "", "", func(s *Server) uint64 { return s.ctr.InboxDrops.Load() }},
	{"messages_sent_total", "Messages sent (protocol v4 packs many into a datagram; each fragment counts).", "", "", func(s *Server) uint64 { return s.ctr.MessagesSent.Load() }},
	{"messages_received_total", "Messages received from admitted clients.", "", "", func(s *Server) uint64 { return s.ctr.MessagesReceived.Load() }},
	{"messages_refused_total", refusedHelp, "reason", "unknown_type", refusedCounter(wire.RefusedUnknownType)},
	{"messages_refused_total", refusedHelp, "reason", "not_loaded", refusedCounter(wire.RefusedNotLoaded)},
	{"messages_refused_total", refusedHelp, "reason", "wrong_direction", refusedCounter(wire.RefusedDirection)},
	{"messages_refused_total", refusedHelp, "reason", "wrong_channel", refusedCounter(wire.RefusedChannel)},
	{"messages_refused_total", refusedHelp, "reason", "bad_size", refusedCounter(wire.RefusedSize)},
	{"messages_refused_total", refusedHelp, "reason", "malformed", refusedCounter(wire.RefusedMalformed)},
	{"messages_refused_total", refusedHelp, "reason", "incomplete", refusedCounter(wire.RefusedIncomplete)},
	{"messages_refused_total", refusedHelp, "reason", "inconsistent", refusedCounter(wire.RefusedInconsistent)},
	{"state_superseded_total", "Queued state messages (entity updates) replaced by a newer state of the same entity before they were sent.", "", "", func(s *Server) uint64 { return s.ctr.StateSuperseded.Load() }},
	{"state_dropped_total", "Queued state messages dropped after waiting for the send-rate pacer longer than a second.", "", "", func(s *Server) uint64 { return s.ctr.StateDropped.Load() }},
	{"refusals_reported_by_clients_total", "Messages of the server's that clients reported refusing (MessageRefused notices).", "", "", func(s *Server) uint64 { return s.ctr.PeerRefusals.Load() }},
	{"messages_held_total", "Reliable messages held, acknowledged, for a module that was not loaded (restarting, reloading).", "", "", func(s *Server) uint64 { return s.ctr.HeldNotLoaded.Load() }},
	{"messages_held_delivered_total", "Held messages delivered once their module was back.", "", "", func(s *Server) uint64 { return s.ctr.HeldDelivered.Load() }},
	{"messages_not_in_protocol_total", "Sends refused because the client's protocol version does not define the message type (a v4-only type to a v3 client; never sent).", "", "", func(s *Server) uint64 { return s.ctr.NotInProtocol.Load() }},
	{"handshakes_total", "Handshakes answered with a newly signed ConnectAccepted (key agreement and signature performed).", "", "", func(s *Server) uint64 { return s.ctr.HandshakesSigned.Load() }},
	{"cookies_total", "Address-validation cookies, by result.", "result", "sent", func(s *Server) uint64 { return s.ctr.CookiesSent.Load() }},
	{"cookies_total", "Address-validation cookies, by result.", "result", "verified", func(s *Server) uint64 { return s.ctr.CookiesVerified.Load() }},
	{"cookies_total", "Address-validation cookies, by result.", "result", "failed", func(s *Server) uint64 { return s.ctr.CookiesFailed.Load() }},
	{"half_open_evicted_total", "Half-open handshakes evicted from a full table for a validated newcomer.", "", "", func(s *Server) uint64 { return s.ctr.HalfOpenEvicted.Load() }},
	{"admission_cap_refusals_total", capHelp, "cap", "address", func(s *Server) uint64 { return s.ctr.AddressCapRefused.Load() }},
	{"admission_cap_refusals_total", capHelp, "cap", "prefix", func(s *Server) uint64 { return s.ctr.PrefixCapRefused.Load() }},
	{"resume_tickets_total", "Resume tickets issued (docs/protocol.md §3.15).", "", "", func(s *Server) uint64 { return s.ctr.ResumeTicketsIssued.Load() }},
	{"seat_holds_total", "Seats held for a resumption when a client's path went dark (Timeout or failed delivery).", "", "", func(s *Server) uint64 { return s.ctr.SeatsHeld.Load() }},
	{"seat_holds_expired_total", "Held seats released without a resumption (network.resume_seconds passed): the player left then.", "", "", func(s *Server) uint64 { return s.ctr.SeatsExpired.Load() }},
	{"seat_holds_woken_total", "Held seats whose client was heard again on its old session before the hold ended (back before its own timeout): the seat woke, nothing to resume.", "", "", func(s *Server) uint64 { return s.ctr.SeatsWoken.Load() }},
	{"admissions_refused_total", admissionHelp, "reason", "server_draining", func(s *Server) uint64 { return s.ctr.AdmissionDrainRefused.Load() }},
	{"admissions_refused_total", admissionHelp, "reason", "server_full", func(s *Server) uint64 { return s.ctr.AdmissionFullRefused.Load() }},
	{"resumptions_total", resumeHelp, "result", "resumed", func(s *Server) uint64 { return s.ctr.Resumed.Load() }},
	{"resumptions_total", resumeHelp, "result", "expired", func(s *Server) uint64 { return s.ctr.ResumeRefusedExpired.Load() }},
	{"resumptions_total", resumeHelp, "result", "invalid", func(s *Server) uint64 { return s.ctr.ResumeRefusedInvalid.Load() }},
	{"connection_ids_issued_total", "Connection ids told to clients that asked for one (they can migrate; docs/protocol.md §4.1).", "", "", func(s *Server) uint64 { return s.ctr.ConnectionIDsIssued.Load() }},
	{"migrations_total", "Sessions moved to a new client address after the client proved it (a path validation that succeeded).", "", "", func(s *Server) uint64 { return s.ctr.Migrations.Load() }},
	{"path_validations_total", pathHelp, "result", "started", func(s *Server) uint64 { return s.ctr.PathValidationsStarted.Load() }},
	{"path_validations_total", pathHelp, "result", "failed", func(s *Server) uint64 { return s.ctr.PathValidationsFailed.Load() }},
	{"path_challenges_held_total", "Path challenges not sent because they would pass three times the bytes received from the unvalidated address.", "", "", func(s *Server) uint64 { return s.ctr.PathChallengesHeld.Load() }},
}

const resumeHelp = "Handshakes that presented a resume ticket, by result: resumed, refused ResumeExpired (the seat was no longer held), refused ResumeInvalid (ticket, proof, name or server wrong, or the ticket used)."

const admissionHelp = "Handshakes refused at admission (a sealed Disconnect after ClientFinished; the hello had passed), by reason: server_draining, server_full. Where a held seat may come back, a draining or full server judges this at ClientFinished instead of refusing the hello (docs/protocol.md §3.14)."

const pathHelp = "Path validations of a new client address (an authenticated frame came from it), by result: started, and failed (not answered within 3 s, or replaced by a newer address; the session stayed where it was)."

const capHelp = "Clients refused AddressLimit because their address, or their /24 or /64, had as many admitted clients as the admission caps allow (at the hello and at admission)."

const refusedHelp = "Authenticated messages refused (acknowledged if reliable, counted, dropped; docs/protocol.md §5.6), by reason."

func refusedCounter(r wire.RefusalReason) func(*Server) uint64 {
	return func(s *Server) uint64 { return s.ctr.Refused[r].Load() }
}

const droppedHelp = "Datagrams dropped before reaching a session or a handler, by reason (protocol §13)."

// otherDrops is PacketsDropped less the drops counted under a reason.
func otherDrops(s *Server) uint64 {
	c := &s.ctr
	all := c.PacketsDropped.Load()
	named := c.SecurityDrops.Load() + c.LateFrames.Load() + c.PlaintextFramesDropped.Load() + c.MalformedDropped.Load() +
		c.PolicyDrops.Load() + c.ConnectRateLimited.Load() + c.PrefixRateLimited.Load() + c.HandshakeBudgetRefused.Load() +
		c.UnvalidatedReplyRefused.Load() + c.UnvalidatedRefusalRefused.Load() + c.HalfOpenCapRefused.Load() + c.AmplificationDropped.Load()
	if named > all { // the loads are not one snapshot
		return 0
	}
	return all - named
}

// handshakeCounters count the ConnectRejected answers by reason.
type handshakeCounters struct {
	refused [256]atomic.Uint64 // by wire.RejectReason
}

func (h *handshakeCounters) refuse(r wire.RejectReason) { h.refused[r].Add(1) }

// refusalReasons are the reasons exported even while zero, so that a
// dashboard sees every series from the start.
var refusalReasons = []wire.RejectReason{
	wire.RejectProtocolMissing, wire.RejectProtocolTooOld, wire.RejectProtocolTooNew,
	wire.RejectMalformedHandshake, wire.RejectUnsupportedSuite, wire.RejectServerFull, wire.RejectBanned,
	wire.RejectAddressLimit, wire.RejectServerDraining,
}

// AppendCounters appends every server-wide counter to dst; safe from any
// goroutine (atomic loads only, no lock).
func (s *Server) AppendCounters(dst []CounterSample) []CounterSample {
	for _, c := range counterTable {
		dst = append(dst, CounterSample{Family: c.family, Help: c.help, LabelName: c.label, LabelValue: c.value, Value: c.get(s)})
	}
	dst = append(dst, CounterSample{Family: "half_open", Help: "Half-open handshakes now (validated, waiting for ClientFinished).",
		Value: uint64(max(s.ctr.HalfOpen.Load(), 0)), Gauge: true})
	dst = append(dst, CounterSample{Family: "seats_held", Help: "Seats held now for a resumption; each keeps its slot (counts toward server.max_clients).",
		Value: uint64(s.HeldSeats()), Gauge: true})
	for _, r := range refusalReasons {
		dst = append(dst, CounterSample{
			Family: "handshake_refusals_total", Help: "Connect datagrams answered with ConnectRejected, by reason (protocol §5.6).",
			LabelName: "reason", LabelValue: refusalLabel(r), Value: s.hs.refused[r].Load(),
		})
	}
	return dst
}

// refusalLabel is a reject reason as a label value: snake case.
func refusalLabel(r wire.RejectReason) string {
	switch r {
	case wire.RejectProtocolMissing:
		return "protocol_missing"
	case wire.RejectProtocolTooOld:
		return "protocol_too_old"
	case wire.RejectProtocolTooNew:
		return "protocol_too_new"
	case wire.RejectMalformedHandshake:
		return "malformed_handshake"
	case wire.RejectUnsupportedSuite:
		return "unsupported_suite"
	case wire.RejectServerFull:
		return "server_full"
	case wire.RejectBanned:
		return "banned"
	case wire.RejectAddressLimit:
		return "address_limit"
	case wire.RejectServerDraining:
		return "server_draining"
	}
	return "other"
}
