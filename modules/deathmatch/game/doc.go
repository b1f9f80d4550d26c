// Package game owns the deathmatch rules as pure logic on a tick clock:
// players and teams, movement through sim/movement on the map's obstacles,
// hitscan fire validated by a Raycaster, health, damage, kills, deaths and
// score, respawn after a delay at the spawn point farthest from enemies,
// friendly fire and team auto-balance.
//
// What it deliberately does not own is the match lifecycle: warmup, rounds,
// the score and time limits, MatchStart / MatchEnd / ScoreUpdate and the map
// rotation belong to the host (host/match), which already announces them to
// every client. A Game is told about them (StartRound with the host's
// MatchStart, EndMatch, ChangeMap) and reports what happened as Events; its
// caller turns a kill into the host's AddScore (killer +1 score +1 kill,
// victim +1 death), and the host's scoreboard ends the round at the score
// limit. Game keeps the same counts for its own use (the spawn rule, team
// totals, a status line) and stops counting at the same moment as the host
// (it applies the limits MatchStart carries), so the two agree even when the
// host's announcements reach the module a few events late.
//
// Time is the tick: Tick advances it by one, and every duration of Config
// is rounded up to whole ticks. Inputs arrive between ticks (Input), one
// ClientInput per client per tick as §9.1 intends, each simulated over one
// fixed step whatever its dt claims; a client may bank at most
// MaxInputBurst inputs, so sending faster than the tick rate buys nothing.
//
// Scoring, per kill while a round is live:
//
//	enemy kill:  killer score +1, kills +1; victim deaths +1
//	team kill:   killer score −1 (friendly fire on);  victim deaths +1
//	suicide:     victim score −1, deaths +1
//
// so over a match Σkills = Σdeaths − suicides − team kills.
//
// A Game is deterministic: the same Config (Seed included), map, Raycaster
// results and calls give the same Events. It is not safe for concurrent use
// (it belongs to the module's game goroutine), never panics on client input,
// and allocates nothing per tick or per input once its buffers have grown.
package game
