package gamemsg

import "github.com/sparkhost/sparkhost/netstack/wire"

// Input, prediction and match payloads of §4 and §9.1. Every float here is game
// input, so NaN and ±Inf make the payload malformed (§1).

// Buttons is the button bit set of ClientInput (§9.1).
type Buttons uint8

// Button bits of §9.1; bits 5-7 are reserved and must be zero.
const (
	ButtonJump Buttons = 1 << iota
	ButtonFire
	ButtonReload
	ButtonSprint
	ButtonCrouch

	buttonsReserved Buttons = 0xE0
)

// ClientInput is the payload of ClientInput (type 11, 29 bytes, §9.1): one
// tick of the client's controls.
type ClientInput struct {
	InputSeq    uint32
	MoveForward float32 // [-1, 1]
	MoveRight   float32 // [-1, 1]
	LookYaw     float32 // degrees, any finite value
	LookPitch   float32 // degrees, [-89, 89]
	Buttons     Buttons // bits 5-7 zero
	DT          float32 // seconds, 0 < DT ≤ 0.25
	ClientTime  float32 // seconds, client clock
}

// AppendClientInput appends the 29-byte encoding of m to dst.
func AppendClientInput(dst []byte, m *ClientInput) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.InputSeq)
	w.F32(m.MoveForward)
	w.F32(m.MoveRight)
	w.F32(m.LookYaw)
	w.F32(m.LookPitch)
	w.U8(uint8(m.Buttons))
	w.F32(m.DT)
	w.F32(m.ClientTime)
	return w.Bytes()
}

// ParseClientInput parses a ClientInput payload and applies the ranges of §9.1.
func ParseClientInput(p []byte) (ClientInput, error) {
	r := wire.NewReader(p)
	m := ClientInput{
		InputSeq:    r.U32(),
		MoveForward: r.FiniteF32(),
		MoveRight:   r.FiniteF32(),
		LookYaw:     r.FiniteF32(),
		LookPitch:   r.FiniteF32(),
		Buttons:     Buttons(r.U8()),
		DT:          r.FiniteF32(),
		ClientTime:  r.FiniteF32(),
	}
	switch {
	case m.MoveForward < -1 || m.MoveForward > 1, m.MoveRight < -1 || m.MoveRight > 1,
		m.LookPitch < -89 || m.LookPitch > 89, !(m.DT > 0 && m.DT <= 0.25):
		r.Fail(errOutOfRange)
	case m.Buttons&buttonsReserved != 0:
		r.Fail(errReservedBits)
	}
	if err := wire.Finish(&r); err != nil {
		return ClientInput{}, err
	}
	return m, nil
}

// InputFlags is the flag bit set of InputAck (§9.1).
type InputFlags uint8

// InputAck flag bits of §9.1. The spec reserves no other bits, so a receiver
// ignores them rather than dropping the packet.
const (
	FlagGrounded InputFlags = 1 << iota
	FlagCrouching
	FlagSprinting
)

// InputAck is the payload of InputAck (type 12, 37 bytes, §9.1): the server's
// authoritative state after it applied input LastInputSeq, for reconciliation.
type InputAck struct {
	LastInputSeq uint32
	Position     wire.Vec3
	Velocity     wire.Vec3
	Yaw          float32 // degrees
	Pitch        float32 // degrees
	Flags        InputFlags
}

// AppendInputAck appends the 37-byte encoding of m to dst.
func AppendInputAck(dst []byte, m *InputAck) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.LastInputSeq)
	w.Vec3(m.Position)
	w.Vec3(m.Velocity)
	w.F32(m.Yaw)
	w.F32(m.Pitch)
	w.U8(uint8(m.Flags))
	return w.Bytes()
}

// ParseInputAck parses an InputAck payload; every float must be finite.
func ParseInputAck(p []byte) (InputAck, error) {
	r := wire.NewReader(p)
	m := InputAck{
		LastInputSeq: r.U32(),
		Position:     r.FiniteVec3(),
		Velocity:     r.FiniteVec3(),
		Yaw:          r.FiniteF32(),
		Pitch:        r.FiniteF32(),
		Flags:        InputFlags(r.U8()),
	}
	if err := wire.Finish(&r); err != nil {
		return InputAck{}, err
	}
	return m, nil
}

// MatchStart is the payload of MatchStart (type 15, 12..76 bytes).
type MatchStart struct {
	Map        string   // ≤ 64 bytes of UTF-8 without NUL
	Mode       GameMode // 0..6
	TimeLimit  float32  // seconds
	ScoreLimit int32
	Round      uint8
}

// AppendMatchStart appends the encoding of m to dst.
func AppendMatchStart(dst []byte, m *MatchStart) []byte {
	w := wire.AppendWriter(dst)
	w.Str(m.Map)
	w.U8(uint8(m.Mode))
	w.F32(m.TimeLimit)
	w.I32(m.ScoreLimit)
	w.U8(m.Round)
	return w.Bytes()
}

// ParseMatchStart parses a MatchStart payload.
func ParseMatchStart(p []byte) (MatchStart, error) {
	mapName, m, err := scanMatchStart(p)
	if err != nil {
		return MatchStart{}, err
	}
	m.Map = string(mapName)
	return m, nil
}

func scanMatchStart(p []byte) ([]byte, MatchStart, error) {
	r := wire.NewReader(p)
	mapName := r.Text(MaxMapLen)
	m := MatchStart{Mode: GameMode(r.U8()), TimeLimit: r.FiniteF32(), ScoreLimit: r.I32(), Round: r.U8()}
	if !m.Mode.Valid() {
		r.Fail(errUnknownEnum)
	}
	return mapName, m, wire.Finish(&r)
}

// MatchEnd is the payload of MatchEnd (type 16, 9 bytes).
type MatchEnd struct {
	Reason      MatchEndReason // 0..2
	Winner      uint32         // client id
	WinnerScore int32
}

// AppendMatchEnd appends the 9-byte encoding of m to dst.
func AppendMatchEnd(dst []byte, m *MatchEnd) []byte {
	w := wire.AppendWriter(dst)
	w.U8(uint8(m.Reason))
	w.U32(m.Winner)
	w.I32(m.WinnerScore)
	return w.Bytes()
}

// ParseMatchEnd parses a MatchEnd payload.
func ParseMatchEnd(p []byte) (MatchEnd, error) {
	r := wire.NewReader(p)
	m := MatchEnd{Reason: MatchEndReason(r.U8()), Winner: r.U32(), WinnerScore: r.I32()}
	if !m.Reason.Valid() {
		r.Fail(errUnknownEnum)
	}
	if err := wire.Finish(&r); err != nil {
		return MatchEnd{}, err
	}
	return m, nil
}

// PlayerRespawn is the payload of PlayerRespawn (type 17, 24 bytes).
type PlayerRespawn struct {
	Client   uint32
	EntityID uint32
	Position wire.Vec3
	Yaw      float32 // degrees
}

// AppendPlayerRespawn appends the 24-byte encoding of m to dst.
func AppendPlayerRespawn(dst []byte, m *PlayerRespawn) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.Client)
	w.U32(m.EntityID)
	w.Vec3(m.Position)
	w.F32(m.Yaw)
	return w.Bytes()
}

// ParsePlayerRespawn parses a PlayerRespawn payload; every float must be finite.
func ParsePlayerRespawn(p []byte) (PlayerRespawn, error) {
	r := wire.NewReader(p)
	m := PlayerRespawn{Client: r.U32(), EntityID: r.U32(), Position: r.FiniteVec3(), Yaw: r.FiniteF32()}
	if err := wire.Finish(&r); err != nil {
		return PlayerRespawn{}, err
	}
	return m, nil
}

// ScoreEntry is one row of ScoreUpdate.
type ScoreEntry struct {
	Client uint32
	Score  int32
	Kills  int32
	Deaths int32
}

// ScoreUpdate is the payload of ScoreUpdate (type 18, exactly 2 + 16·n bytes).
type ScoreUpdate struct {
	Scores []ScoreEntry // at most 4090 rows fit MAX_PAYLOAD
}

// AppendScoreUpdate appends the encoding of m to dst.
func AppendScoreUpdate(dst []byte, m *ScoreUpdate) []byte {
	w := wire.AppendWriter(dst)
	w.U16(uint16(len(m.Scores)))
	for _, s := range m.Scores {
		w.U32(s.Client)
		w.I32(s.Score)
		w.I32(s.Kills)
		w.I32(s.Deaths)
	}
	return w.Bytes()
}

// ParseScoreUpdate parses a ScoreUpdate payload. The row count is checked
// against the payload length before the rows are allocated.
func ParseScoreUpdate(p []byte) (ScoreUpdate, error) {
	n, err := scanScoreUpdate(p)
	if err != nil || n == 0 {
		return ScoreUpdate{}, err
	}
	r := wire.NewReader(p[2:])
	m := ScoreUpdate{Scores: make([]ScoreEntry, n)}
	for i := range m.Scores {
		m.Scores[i] = ScoreEntry{Client: r.U32(), Score: r.I32(), Kills: r.I32(), Deaths: r.I32()}
	}
	return m, nil
}

func scanScoreUpdate(p []byte) (int, error) {
	r := wire.NewReader(p)
	n := int(r.U16())
	if r.HasError() {
		return 0, errTruncated
	}
	if r.Remaining() != 16*n {
		return 0, errScoreCount
	}
	return n, nil
}
