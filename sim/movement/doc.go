// Package movement owns the player movement that the server and the predicting
// client both run: a State (what InputAck carries) plus one ClientInput and a
// fixed step give the next State, against a World of axis-aligned box
// obstacles inside map bounds.
//
// Its one promise is determinism: the same World, State and ClientInput give a
// bit-identical next State on every run and every platform Go targets, so a
// client that snaps to an InputAck and replays its unacknowledged inputs lands
// exactly where the server will. Three rules keep that promise:
//
//   - State holds exactly the fields of InputAck (§9.1), in float32, so an
//     InputAck loses nothing: snapping to one is snapping to the server's state
//     bit for bit. No hidden timers or accumulators live outside State.
//   - Arithmetic is float64 on float32 inputs, and every product that feeds an
//     addition is rounded explicitly (float64(a*b)): the Go spec lets a
//     compiler fuse x*y+z into one FMA instruction (it does on arm64, ppc64le,
//     s390x, riscv64) unless a conversion forces the rounding, and a fused
//     result differs in the last bit from amd64's.
//   - Trigonometry is this package's own polynomial (trig.go), not math.Sincos,
//     whose evaluation the compiler is free to fuse per architecture.
//
// Movement is Quake-like: ground friction and acceleration towards the wished
// velocity, weaker air control, gravity, jump, sprint and crouch speeds.
// Collision moves the player's box one axis at a time (Y, then X, then Z),
// each clamped at the first obstacle or bounds face ahead, and zeroes the
// velocity on a blocked axis: the player slides along walls and lands on
// floors. There are no slopes or steps; obstacles are boxes.
//
// Coordinates: Y is up; yaw 0 faces +Z and yaw 90 faces +X (Unity's
// convention); pitch is looking up or down and does not affect movement.
// Position is the centre of the bottom face of the player's box.
//
// The package must never panic or produce a non-finite State: inputs that
// §9.1 calls malformed are refused (the State is returned unchanged), and a
// finite State stays finite and inside the bounds whatever the input.
package movement
