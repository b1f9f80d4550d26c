package predict

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// FuzzReconcile feeds arbitrary InputAck bits (not only what ParseInputAck
// lets through): Reconcile refuses or applies them, and the predicted and
// rendered positions stay finite either way.
func FuzzReconcile(f *testing.F) {
	f.Add(uint32(3), []byte{}, uint8(1))
	f.Add(uint32(1), binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.Inf(1)))), uint8(7))
	f.Add(uint32(2), func() (b []byte) {
		for range 8 {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(math.MaxFloat32))
		}
		return b
	}(), uint8(0xff))
	w := newWorld(f)
	f.Fuzz(func(t *testing.T, seq uint32, floats []byte, flags uint8) {
		p, err := New(w, spawn, Config{SmoothTime: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			p.Predict(gamemsg.ClientInput{MoveForward: 1, DT: 0.02})
		}
		var v [8]float32
		for i := range v {
			if len(floats) >= 4*(i+1) {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(floats[4*i:]))
			}
		}
		ack := gamemsg.InputAck{
			LastInputSeq: seq % 8,
			Position:     wire.Vec3{X: v[0], Y: v[1], Z: v[2]},
			Velocity:     wire.Vec3{X: v[3], Y: v[4], Z: v[5]},
			Yaw:          v[6], Pitch: v[7], Flags: gamemsg.InputFlags(flags),
		}
		p.Reconcile(ack)
		p.Elapse(30 * time.Millisecond)
		if !p.State().IsFinite() || !p.RenderPosition().IsFinite() || !(wire.Vec3{X: p.LastCorrection()}).IsFinite() {
			t.Fatalf("ack %+v left state %+v render %+v correction %v", ack, p.State(), p.RenderPosition(), p.LastCorrection())
		}
	})
}
