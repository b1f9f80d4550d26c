// Package predict owns client-side prediction and reconciliation for the
// local player: every input is numbered, simulated at once with the same
// movement code the server runs (sim/movement) and kept until the server
// acknowledges it; on InputAck the Predictor drops the acknowledged inputs,
// snaps to the server's authoritative state and replays the rest on top.
//
// Because movement is deterministic and State travels losslessly in
// InputAck, a client whose inputs the server applied unchanged sees a
// correction of exactly zero; anything the server did that the client could
// not predict (a push, a teleport, a lost input) shows up as a correction,
// recorded as LastCorrection and optionally smoothed on screen by a render
// offset that decays to zero.
//
// Transport is the caller's: it sends what Predict returns (plus, ideally,
// the other pending inputs: see AppendPending) and feeds InputAcks to
// Reconcile. The Predictor must never block, never hold more than
// Config.MaxPending inputs, and never panic or go non-finite whatever an
// InputAck carries (a malformed one is refused). It is not safe for
// concurrent use: it belongs to the client's game loop.
package predict
