package gamemsg

import (
	"strings"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// input builds a ClientInput payload by hand so each case changes one field.
func input(move, right, yaw, pitch float32, buttons uint8, dt, clientTime float32) []byte {
	return enc(uint32(5), move, right, yaw, pitch, buttons, dt, clientTime)
}

func TestParseClientInput(t *testing.T) {
	runParseCases(t, ParseClientInput, AppendClientInput, []parseCase{
		{"typical", input(1, -0.5, 270, 10, 0x1F, 1.0/60, 3), nil},
		{"bounds", input(-1, 1, -720, -89, 0, 0.25, -1), nil},
		{"pitch +89", input(0, 0, 0, 89, 0, 0.001, 0), nil},
		{"smallest dt", input(0, 0, 0, 0, 0, 1e-30, 0), nil},
		{"negative zero move", input(float32(negZero()), 0, 0, 0, 0, 0.1, 0), nil},
		{"move_forward > 1", input(1.0001, 0, 0, 0, 0, 0.1, 0), errOutOfRange},
		{"move_forward < -1", input(-1.5, 0, 0, 0, 0, 0.1, 0), errOutOfRange},
		{"move_right > 1", input(0, 2, 0, 0, 0, 0.1, 0), errOutOfRange},
		{"pitch > 89", input(0, 0, 0, 89.5, 0, 0.1, 0), errOutOfRange},
		{"pitch < -89", input(0, 0, 0, -90, 0, 0.1, 0), errOutOfRange},
		{"dt zero", input(0, 0, 0, 0, 0, 0, 0), errOutOfRange},
		{"dt negative", input(0, 0, 0, 0, 0, -0.1, 0), errOutOfRange},
		{"dt > 0.25", input(0, 0, 0, 0, 0, 0.2501, 0), errOutOfRange},
		{"button bit 5", input(0, 0, 0, 0, 0x20, 0.1, 0), errReservedBits},
		{"button bit 7", input(0, 0, 0, 0, 0x80, 0.1, 0), errReservedBits},
		{"NaN move", input(nan, 0, 0, 0, 0, 0.1, 0), wire.ErrNonFinite},
		{"Inf right", input(0, pinf, 0, 0, 0, 0.1, 0), wire.ErrNonFinite},
		{"Inf yaw", input(0, 0, ninf, 0, 0, 0.1, 0), wire.ErrNonFinite},
		{"NaN pitch", input(0, 0, 0, nan, 0, 0.1, 0), wire.ErrNonFinite},
		{"NaN dt", input(0, 0, 0, 0, 0, nan, 0), wire.ErrNonFinite},
		{"Inf client_time", input(0, 0, 0, 0, 0, 0.1, pinf), wire.ErrNonFinite},
		{"28 bytes", input(0, 0, 0, 0, 0, 0.1, 0)[:28], wire.ErrOverrun},
		{"30 bytes", append(input(0, 0, 0, 0, 0, 0.1, 0), 0), wire.ErrTrailing},
	})
}

func negZero() float64 { z := 0.0; return -z }

func TestParseInputAck(t *testing.T) {
	ok := func(pos wire.Vec3, yaw float32, flags uint8) []byte {
		return enc(uint32(9), pos, wire.Vec3{X: 1, Y: 0, Z: 0}, yaw, float32(-10), flags)
	}
	runParseCases(t, ParseInputAck, AppendInputAck, []parseCase{
		{"typical", ok(wire.Vec3{X: 1, Y: 2, Z: 3}, 45, uint8(FlagGrounded|FlagSprinting)), nil},
		{"undefined flag bits are ignored", ok(wire.Vec3{}, 0, 0xF8), nil},
		{"NaN position", ok(wire.Vec3{X: 0, Y: nan, Z: 0}, 0, 0), wire.ErrNonFinite},
		{"Inf yaw", ok(wire.Vec3{}, ninf, 0), wire.ErrNonFinite},
		{"Inf velocity", enc(uint32(9), wire.Vec3{}, wire.Vec3{X: pinf, Y: 0, Z: 0}, float32(0), float32(0), uint8(0)), wire.ErrNonFinite},
		{"36 bytes", ok(wire.Vec3{}, 0, 0)[:36], wire.ErrOverrun},
		{"38 bytes", append(ok(wire.Vec3{}, 0, 0), 0), wire.ErrTrailing},
	})
}

func TestParseMatchStart(t *testing.T) {
	runParseCases(t, ParseMatchStart, AppendMatchStart, []parseCase{
		{"typical", enc("dust", uint8(ModeDomination), float32(600), int32(50), uint8(1)), nil},
		{"empty map (12 bytes)", enc("", uint8(0), float32(0), int32(0), uint8(0)), nil},
		{"64-byte map (76 bytes)", enc(strings.Repeat("m", 64), uint8(ModeCustom), float32(-1), int32(-1), uint8(255)), nil},
		{"65-byte map", enc(strings.Repeat("m", 65), uint8(0), float32(0), int32(0), uint8(0)), wire.ErrTextTooLong},
		{"NUL in map", enc("a\x00", uint8(0), float32(0), int32(0), uint8(0)), wire.ErrTextInvalid},
		{"mode 7", enc("dust", uint8(7), float32(600), int32(50), uint8(1)), errUnknownEnum},
		{"NaN time limit", enc("dust", uint8(0), nan, int32(50), uint8(1)), wire.ErrNonFinite},
		{"Inf time limit", enc("dust", uint8(0), pinf, int32(50), uint8(1)), wire.ErrNonFinite},
		{"truncated", enc("dust", uint8(0), float32(600), int32(50)), wire.ErrOverrun},
		{"trailing byte", enc("dust", uint8(0), float32(600), int32(50), uint8(1), uint8(0)), wire.ErrTrailing},
	})
}

func TestParseMatchEnd(t *testing.T) {
	runParseCases(t, ParseMatchEnd, AppendMatchEnd, []parseCase{
		{"score", enc(uint8(0), uint32(7), int32(50)), nil},
		{"admin", enc(uint8(2), uint32(0), int32(-3)), nil},
		{"reason 3", enc(uint8(3), uint32(7), int32(50)), errUnknownEnum},
		{"8 bytes", enc(uint8(0), uint32(7), uint16(0), uint8(0)), wire.ErrOverrun},
		{"10 bytes", enc(uint8(0), uint32(7), int32(50), uint8(0)), wire.ErrTrailing},
	})
}

func TestParsePlayerRespawn(t *testing.T) {
	runParseCases(t, ParsePlayerRespawn, AppendPlayerRespawn, []parseCase{
		{"typical", enc(uint32(7), uint32(42), wire.Vec3{X: 1, Y: 2, Z: 3}, float32(90)), nil},
		{"NaN position", enc(uint32(7), uint32(42), wire.Vec3{X: nan, Y: 2, Z: 3}, float32(90)), wire.ErrNonFinite},
		{"Inf yaw", enc(uint32(7), uint32(42), wire.Vec3{X: 1, Y: 2, Z: 3}, pinf), wire.ErrNonFinite},
		{"23 bytes", enc(uint32(7), uint32(42), wire.Vec3{X: 1, Y: 2, Z: 3}, uint16(0), uint8(0)), wire.ErrOverrun},
		{"25 bytes", enc(uint32(7), uint32(42), wire.Vec3{X: 1, Y: 2, Z: 3}, float32(90), uint8(0)), wire.ErrTrailing},
	})
}

func TestParseScoreUpdate(t *testing.T) {
	row := func(c uint32, s int32) []byte { return enc(c, s, int32(1), int32(2)) }
	runParseCases(t, ParseScoreUpdate, AppendScoreUpdate, []parseCase{
		{"none", enc(uint16(0)), nil},
		{"two rows", enc(uint16(2), row(7, 10), row(8, -4)), nil},
		{"n larger than rows", enc(uint16(3), row(7, 10), row(8, -4)), errScoreCount},
		{"n smaller than rows", enc(uint16(1), row(7, 10), row(8, -4)), errScoreCount},
		{"partial row", enc(uint16(1), row(7, 10)[:15]), errScoreCount},
		{"huge n, no rows", enc(uint16(65535)), errScoreCount},
		{"1 byte", []byte{0}, wire.ErrOverrun},
	})
	big := ScoreUpdate{Scores: make([]ScoreEntry, 4090)}
	if p := AppendScoreUpdate(nil, &big); len(p) > wire.MaxPayload {
		t.Fatalf("4090 rows take %d bytes, above MAX_PAYLOAD", len(p))
	}
}
