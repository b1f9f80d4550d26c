package lua

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The handler-only cost of one message: a Step with one event whose handler
// reads two u32 and replies, in Lua (testdata/echo2.lua) and in Go
// (supervisor.Funcs), against the same recording host.

func benchStep(b *testing.B, m module.Module, h *testHost) {
	if _, err := m.Load(h); err != nil {
		b.Fatal(err)
	}
	defer m.Unload()
	ev := []module.Event{message(1, 1200, []byte{1, 0, 0, 0, 2, 0, 0, 0})}
	b.ReportAllocs()
	var n uint64
	for b.Loop() {
		n++
		now := time.Now()
		if err := m.Step(module.Tick{Number: n, DT: time.Millisecond, Now: now, Deadline: now.Add(time.Second)}, ev); err != nil {
			b.Fatal(err)
		}
		if len(h.sends) > 1024 {
			h.takeSends()
		}
	}
	if faults := h.takeFaults(); len(faults) > 0 {
		b.Fatalf("faults: %v", faults)
	}
}

func BenchmarkStepOneMessageLua(b *testing.B) {
	m, err := New("testdata/echo2.lua", Config{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	benchStep(b, m, newTestHost())
}

func BenchmarkStepOneMessageGo(b *testing.B) {
	buf := make([]byte, 0, 8)
	f := &supervisor.Funcs{
		Manifest: module.Manifest{Name: "echo2"},
		OnEvent: func(h module.Host, ev *module.Event) {
			r := wire.NewReader(ev.Payload)
			a, c := r.U32(), r.U32()
			buf = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(buf[:0], a), c)
			h.Send(ev.Client, 1201, buf)
		},
	}
	benchStep(b, f, newTestHost())
}
