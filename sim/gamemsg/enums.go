package gamemsg

import "strconv"

// GameMode is the mode byte of GameStateSync and MatchStart (§9.2).
type GameMode uint8

// Game modes of §9.2.
const (
	ModeDeathmatch GameMode = iota
	ModeTeamDeathmatch
	ModeCaptureTheFlag
	ModeDomination
	ModeSearchAndDestroy
	ModeFreeForAll
	ModeCustom
)

var modeNames = [...]string{"Deathmatch", "TeamDeathmatch", "CaptureTheFlag",
	"Domination", "SearchAndDestroy", "FreeForAll", "Custom"}

// String returns the spec's name of m.
func (m GameMode) String() string { return enumName(modeNames[:], uint8(m), "GameMode") }

// Valid reports whether m is one of the modes of §9.2.
func (m GameMode) Valid() bool { return m <= ModeCustom }

// MatchState is GameStateSync.match_state (§9.2).
type MatchState uint8

// Match states of §9.2.
const (
	MatchWarmup MatchState = iota
	MatchInProgress
	MatchEnded
	MatchIntermission
)

var matchStateNames = [...]string{"Warmup", "InProgress", "Ended", "Intermission"}

// String returns the spec's name of s.
func (s MatchState) String() string {
	return enumName(matchStateNames[:], uint8(s), "MatchState")
}

// Valid reports whether s is one of the states of §9.2.
func (s MatchState) Valid() bool { return s <= MatchIntermission }

// MatchEndReason is MatchEnd.reason (§4).
type MatchEndReason uint8

// Match end reasons of §4.
const (
	MatchEndScore MatchEndReason = iota
	MatchEndTime
	MatchEndAdmin
)

var matchEndNames = [...]string{"Score", "Time", "Admin"}

// String returns the spec's name of r.
func (r MatchEndReason) String() string {
	return enumName(matchEndNames[:], uint8(r), "MatchEndReason")
}

// Valid reports whether r is one of the reasons of §4.
func (r MatchEndReason) Valid() bool { return r <= MatchEndAdmin }

// FieldKind is the kind of a replicated entity field (§9.2); it fixes the
// field's width in EntitySpawn and EntityStateUpdate data.
type FieldKind uint8

// Field kinds of §9.2.
const (
	KindBool FieldKind = iota
	KindInt32
	KindUint32
	KindFloat
	KindVec3
)

var kindNames = [...]string{"bool", "int32", "uint32", "float", "vec3"}

// String returns the spec's name of k.
func (k FieldKind) String() string { return enumName(kindNames[:], uint8(k), "FieldKind") }

// Valid reports whether k is one of the kinds of §9.2.
func (k FieldKind) Valid() bool { return k <= KindVec3 }

// Width returns the encoded size of a field of kind k in bytes, or 0 for an
// undefined kind.
func (k FieldKind) Width() int {
	switch k {
	case KindBool:
		return 1
	case KindInt32, KindUint32, KindFloat:
		return 4
	case KindVec3:
		return 12
	}
	return 0
}

// Visibility says which clients may see a replicated field (§9.2).
type Visibility uint8

// Visibilities of §9.2.
const (
	VisibilityPublic Visibility = iota
	VisibilityPrivate
	VisibilityParty
	VisibilitySpectator
)

var visibilityNames = [...]string{"Public", "Private", "Party", "Spectator"}

// String returns the spec's name of v.
func (v Visibility) String() string {
	return enumName(visibilityNames[:], uint8(v), "Visibility")
}

// Valid reports whether v is one of the visibilities of §9.2.
func (v Visibility) Valid() bool { return v <= VisibilitySpectator }

func enumName(names []string, v uint8, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}
