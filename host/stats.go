package host

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/ops"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// ServerStats is what `status` shows and what operators graph.
type ServerStats struct {
	Uptime             time.Duration
	Ticks              uint64
	AvgTickMS          float64
	PeakTickMS         float64
	RecentPeakTickMS   float64 // the longest tick of the last full second
	TickRate           int     // configured
	CurrentTickRate    float64 // measured over the last second
	Players            int
	PeakPlayers        int
	MaxPlayers         int
	BytesIn, BytesOut  uint64
	ConnectionsServed  uint64
	Map                string
	MapIndex           int
	MatchState         gamemsg.MatchState
	MatchTimeRemaining time.Duration
	Round              int
	// ChatRelayed, ChatDropped and ChatKicked count chat messages relayed,
	// dropped (over a client's budget, or past a full queue) and the
	// clients disconnected for flooding (RateLimited).
	ChatRelayed, ChatDropped, ChatKicked uint64
	// Net is the transport's totals: traffic, drops by kind, and the
	// handshake counters an operator watches during an attack (half-open
	// handshakes, cookies, signatures, budget refusals).
	Net netstack.Stats
	// Admission is the admission caps in force (negative: no cap).
	Admission netstack.AdmissionCaps
	// ModuleMessagesOverLimit counts the module messages dropped because
	// their client was over [limits] module_messages_per_tick.
	ModuleMessagesOverLimit uint64
	// Rooms open now; RoomRequests carried out (RoomRefused of them
	// answered with a code other than OK), RoomRequestsDropped over a
	// client's budget or past a full queue; ModuleMessagesUnrouted are
	// module messages no module of the sender's room owns.
	Rooms                                          int
	RoomRequests, RoomRefused, RoomRequestsDropped uint64
	ModuleMessagesUnrouted                         uint64
	// RoomPasswords: wrong room passwords checked, refused unchecked
	// during a back-off, clients disconnected for guessing.
	RoomPasswords ops.RoomPasswords
}

// Stats returns a snapshot; safe from any goroutine.
func (s *Server) Stats() ServerStats {
	v := s.view.Load()
	ts := s.loop.Stats()
	ns := s.net.Stats()
	rst := s.rooms.Stats()
	return ServerStats{
		Uptime: time.Since(s.start).Round(time.Second), Ticks: ts.Ticks,
		AvgTickMS: ts.AvgTickMS, PeakTickMS: ts.PeakTickMS, RecentPeakTickMS: ts.RecentPeakMS,
		TickRate: ts.Rate, CurrentTickRate: ts.CurrentRate,
		Players: v.players, PeakPlayers: v.peakPlayers, MaxPlayers: v.maxPlayers,
		BytesIn: ns.BytesReceived, BytesOut: ns.BytesSent, ConnectionsServed: s.served.Load(),
		Map: v.status.Map, MapIndex: v.status.MapIndex, MatchState: v.status.State,
		MatchTimeRemaining: v.status.TimeRemaining, Round: v.status.Round,
		ChatRelayed: s.chat.relayed.Load(), ChatDropped: s.chat.dropped.Load(), ChatKicked: s.chat.kicked.Load(),
		Net:                     ns,
		Admission:               s.net.Admission(),
		ModuleMessagesOverLimit: s.mods.MessagesOverLimit(),
		Rooms:                   v.rooms,
		RoomRequests:            rst.Requests, RoomRefused: rst.Refused,
		RoomRequestsDropped:    s.roomReqs.dropped.Load(),
		ModuleMessagesUnrouted: s.mods.Unrouted(),
		RoomPasswords:          rst.Passwords,
	}
}

// String renders the stats as the `status` command prints them.
func (st ServerStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "uptime %v, %d ticks at %d Hz (measured %.1f), tick avg %.2f ms peak %.2f ms (last second %.2f ms)\n",
		st.Uptime, st.Ticks, st.TickRate, st.CurrentTickRate, st.AvgTickMS, st.PeakTickMS, st.RecentPeakTickMS)
	fmt.Fprintf(&b, "players %d/%d (peak %d), connections served %d\n", st.Players, st.MaxPlayers, st.PeakPlayers, st.ConnectionsServed)
	fmt.Fprintf(&b, "map %s (#%d), %s, round %d", st.Map, st.MapIndex+1, st.MatchState, st.Round)
	if st.MatchTimeRemaining > 0 {
		fmt.Fprintf(&b, ", %v left", st.MatchTimeRemaining.Round(time.Second))
	}
	fmt.Fprintf(&b, "\nbytes in %d, out %d", st.BytesIn, st.BytesOut)
	fmt.Fprintf(&b, "\nchat relayed %d, dropped %d, clients rate-limited %d", st.ChatRelayed, st.ChatDropped, st.ChatKicked)
	n := &st.Net
	fmt.Fprintf(&b, "\nhandshakes: half-open %d (evicted %d), cookies sent %d verified %d failed %d, signatures %d, plain bytes in %d out %d",
		n.HalfOpen, n.HalfOpenEvicted, n.CookiesSent, n.CookiesVerified, n.CookiesFailed, n.HandshakesSigned, n.PlainBytesReceived, n.PlainBytesSent)
	fmt.Fprintf(&b, "\nrefused: address budget %d, prefix budget %d, signature budget %d, unvalidated-reply budget %d, refusal budget %d, half-open caps %d, oversized answers %d, v3 hellos %d",
		n.ConnectRateLimited, n.PrefixRateLimited, n.HandshakeBudgetRefused, n.UnvalidatedReplyRefused, n.UnvalidatedRefusalRefused,
		n.HalfOpenCapRefused, n.AmplificationDropped, n.ProtocolV3Refused)
	fmt.Fprintf(&b, "\nadmission caps: %s per address, %s per /24 or /64; clients refused %d by address, %d by prefix",
		capText(st.Admission.PerAddress), capText(st.Admission.PerPrefix), n.AddressCapRefused, n.PrefixCapRefused)
	fmt.Fprintf(&b, "\ndropped %d: malformed %d, policy %d, security %d, plaintext %d",
		n.PacketsDropped, n.MalformedDropped, n.PolicyDrops, n.SecurityDrops, n.PlaintextFramesDropped)
	fmt.Fprintf(&b, "\nmodule messages over the per-client limit %d, outside the sender's room %d", st.ModuleMessagesOverLimit, st.ModuleMessagesUnrouted)
	fmt.Fprintf(&b, "\nrooms %d, room requests %d (refused %d, dropped %d), room passwords wrong %d, refused in back-off %d, guessers disconnected %d",
		st.Rooms, st.RoomRequests, st.RoomRefused, st.RoomRequestsDropped, st.RoomPasswords.Wrong, st.RoomPasswords.Refused, st.RoomPasswords.Kicked)
	fmt.Fprintf(&b, "\nmessages: sent %d in %d datagrams, received %d; refused %d, reported refused by clients %d; held for a module %d (delivered %d)",
		n.MessagesSent, n.PacketsSent, n.MessagesReceived, n.MessagesRefused, n.PeerRefusals, n.HeldNotLoaded, n.HeldDelivered)
	return b.String()
}

// capText is an admission cap as status prints it.
func capText(v int) string {
	if v <= 0 {
		return "no cap"
	}
	return strconv.Itoa(v)
}
