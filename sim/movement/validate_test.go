package movement

import (
	"errors"
	"math"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestValidateInput(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	ok := input(0, 0, 0, 0)
	cases := []struct {
		name   string
		mutate func(*gamemsg.ClientInput)
		valid  bool
	}{
		{"zero move", func(*gamemsg.ClientInput) {}, true},
		{"axes at the limits", func(in *gamemsg.ClientInput) { in.MoveForward, in.MoveRight = -1, 1 }, true},
		{"pitch at the limits", func(in *gamemsg.ClientInput) { in.LookPitch = -89 }, true},
		{"dt at 0.25", func(in *gamemsg.ClientInput) { in.DT = 0.25 }, true},
		{"huge finite yaw", func(in *gamemsg.ClientInput) { in.LookYaw = math.MaxFloat32 }, true},
		{"all known buttons", func(in *gamemsg.ClientInput) { in.Buttons = knownButtons }, true},
		{"forward above 1", func(in *gamemsg.ClientInput) { in.MoveForward = 1.0001 }, false},
		{"right below -1", func(in *gamemsg.ClientInput) { in.MoveRight = -1.5 }, false},
		{"forward NaN", func(in *gamemsg.ClientInput) { in.MoveForward = nan }, false},
		{"right -Inf", func(in *gamemsg.ClientInput) { in.MoveRight = -inf }, false},
		{"yaw NaN", func(in *gamemsg.ClientInput) { in.LookYaw = nan }, false},
		{"yaw Inf", func(in *gamemsg.ClientInput) { in.LookYaw = inf }, false},
		{"pitch 90", func(in *gamemsg.ClientInput) { in.LookPitch = 90 }, false},
		{"pitch NaN", func(in *gamemsg.ClientInput) { in.LookPitch = nan }, false},
		{"dt zero", func(in *gamemsg.ClientInput) { in.DT = 0 }, false},
		{"dt negative", func(in *gamemsg.ClientInput) { in.DT = -0.01 }, false},
		{"dt above 0.25", func(in *gamemsg.ClientInput) { in.DT = 0.2501 }, false},
		{"dt Inf", func(in *gamemsg.ClientInput) { in.DT = inf }, false},
		{"client time NaN", func(in *gamemsg.ClientInput) { in.ClientTime = nan }, false},
		{"reserved button bit", func(in *gamemsg.ClientInput) { in.Buttons = 1 << 5 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := ok
			c.mutate(&in)
			err := ValidateInput(in)
			if c.valid != (err == nil) {
				t.Fatalf("ValidateInput = %v, want valid=%v", err, c.valid)
			}
			if err != nil && !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v does not wrap ErrInvalidInput", err)
			}
			// The wire parser and this check must agree on every input.
			_, perr := gamemsg.ParseClientInput(gamemsg.AppendClientInput(nil, &in))
			if (perr == nil) != (err == nil) {
				t.Fatalf("ParseClientInput = %v but ValidateInput = %v", perr, err)
			}
		})
	}
}

func TestStepRefusesMalformedInputAndState(t *testing.T) {
	w := newArena(t, Params{})
	s := State{Position: wire.Vec3{Y: 0}, Grounded: true, Yaw: 12}
	bad := input(2, 0, 0, 0)
	got, err := w.Step(s, bad)
	if !errors.Is(err, ErrInvalidInput) || got != s {
		t.Fatalf("malformed input: state %+v err %v, want unchanged and ErrInvalidInput", got, err)
	}
	nan := float32(math.NaN())
	for _, s := range []State{
		{Position: wire.Vec3{X: nan}},
		{Velocity: wire.Vec3{Z: float32(math.Inf(-1))}},
		{Yaw: nan},
		{Pitch: float32(math.Inf(1))},
	} {
		got, err := w.Step(s, input(1, 0, 0, 0))
		if !errors.Is(err, ErrInvalidState) || got.IsFinite() {
			t.Fatalf("state %+v: got %+v err %v, want ErrInvalidState and the state unchanged", s, got, err)
		}
	}
}

func TestNewWorldValidation(t *testing.T) {
	nan := float32(math.NaN())
	good := Box{Max: wire.Vec3{X: 10, Y: 10, Z: 10}}
	cases := []struct {
		name      string
		p         Params
		bounds    Box
		obstacles []Box
		want      error
	}{
		{"defaults", Params{}, good, nil, nil},
		{"negative speed", Params{WalkSpeed: -1}, good, nil, ErrInvalidParams},
		{"NaN gravity", Params{Gravity: math.NaN()}, good, nil, ErrInvalidParams},
		{"Inf accel", Params{Accel: math.Inf(1)}, good, nil, ErrInvalidParams},
		{"huge speed", Params{MaxSpeed: 1e9}, good, nil, ErrInvalidParams},
		{"tick rate too high", Params{TickRate: MaxTickRate + 1}, good, nil, ErrInvalidParams},
		{"negative tick rate", Params{TickRate: -5}, good, nil, ErrInvalidParams},
		{"crouch taller than standing", Params{CrouchHeight: 2, Height: 1.5}, good, nil, ErrInvalidParams},
		{"inverted bounds", Params{}, Box{Min: good.Max, Max: good.Min}, nil, ErrInvalidWorld},
		{"NaN bounds", Params{}, Box{Max: wire.Vec3{X: nan, Y: 10, Z: 10}}, nil, ErrInvalidWorld},
		{"bounds beyond MaxCoordinate", Params{}, Box{Max: wire.Vec3{X: 2 * MaxCoordinate, Y: 10, Z: 10}}, nil, ErrInvalidWorld},
		{"bounds lower than the player", Params{}, Box{Max: wire.Vec3{X: 10, Y: 1, Z: 10}}, nil, ErrInvalidWorld},
		{"inverted obstacle", Params{}, good, []Box{{Min: wire.Vec3{X: 2}, Max: wire.Vec3{X: 1, Y: 1, Z: 1}}}, ErrInvalidWorld},
		{"Inf obstacle", Params{}, good, []Box{{Max: wire.Vec3{X: float32(math.Inf(1))}}}, ErrInvalidWorld},
		{"obstacle outside the bounds is fine", Params{}, good, []Box{{Min: wire.Vec3{X: 50}, Max: wire.Vec3{X: 60, Y: 1, Z: 1}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWorld(c.p, c.bounds, c.obstacles)
			if !errors.Is(err, c.want) || (c.want == nil) != (w != nil) {
				t.Fatalf("NewWorld = %v, %v; want error %v", w, err, c.want)
			}
		})
	}
}

func TestParamsDefaults(t *testing.T) {
	w := newArena(t, Params{WalkSpeed: 5})
	p := w.Params()
	if p.WalkSpeed != 5 || p.TickRate != DefaultTickRate || p.Gravity != DefaultGravity || p.CrouchHeight != DefaultCrouchHeight {
		t.Fatalf("populated params %+v", p)
	}
	if d := w.StepDuration(); d != 16666666 {
		t.Fatalf("StepDuration %v", d)
	}
}
