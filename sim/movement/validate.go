package movement

import (
	"errors"
	"fmt"

	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Errors Step and NewWorld return; match them with errors.Is.
var (
	// ErrInvalidInput: the ClientInput is one §9.1 calls malformed. The spec
	// reads "Out-of-range or non-finite → malformed" and leaves no room for
	// clamping, so the input is refused, never clamped: Step returns the State
	// unchanged, and a server treats it as it treats a malformed packet.
	// gamemsg.ParseClientInput already refuses every such input; this check
	// guards inputs built in-process (bots, tests, a Go module).
	ErrInvalidInput = errors.New("movement: malformed ClientInput (§9.1)")
	// ErrInvalidState: the State given to Step has a NaN or infinite field.
	// Step never produces one; it refuses to propagate one.
	ErrInvalidState = errors.New("movement: state has a non-finite field")
	// ErrInvalidParams: a Params field is out of its range.
	ErrInvalidParams = errors.New("movement: invalid params")
	// ErrInvalidWorld: the bounds or an obstacle is not a valid box.
	ErrInvalidWorld = errors.New("movement: invalid world")
)

// knownButtons are the button bits §9.1 defines; bits 5-7 must be zero.
const knownButtons = gamemsg.ButtonJump | gamemsg.ButtonFire | gamemsg.ButtonReload | gamemsg.ButtonSprint | gamemsg.ButtonCrouch

// ValidateInput applies §9.1 to in: move_forward and move_right in [-1, 1],
// look_pitch in [-89, 89], 0 < dt ≤ 0.25, every float finite, button bits
// 5-7 zero. It returns an error wrapping ErrInvalidInput that names the first
// offending field, or nil. InputSeq and ClientTime's value are not checked
// (any finite client_time is valid).
func ValidateInput(in gamemsg.ClientInput) error {
	bad := func(field string, v float32) error {
		return fmt.Errorf("%w: %s = %v", ErrInvalidInput, field, v)
	}
	switch {
	case !(in.MoveForward >= -1 && in.MoveForward <= 1): // also false for NaN
		return bad("move_forward", in.MoveForward)
	case !(in.MoveRight >= -1 && in.MoveRight <= 1):
		return bad("move_right", in.MoveRight)
	case !finite(in.LookYaw):
		return bad("look_yaw", in.LookYaw)
	case !(in.LookPitch >= -89 && in.LookPitch <= 89):
		return bad("look_pitch", in.LookPitch)
	case !(in.DT > 0 && in.DT <= 0.25):
		return bad("dt", in.DT)
	case !finite(in.ClientTime):
		return bad("client_time", in.ClientTime)
	case in.Buttons&^knownButtons != 0:
		return fmt.Errorf("%w: reserved button bits %#02x set", ErrInvalidInput, uint8(in.Buttons&^knownButtons))
	}
	return nil
}
