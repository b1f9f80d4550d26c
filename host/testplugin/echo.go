package testplugin

import (
	"encoding/binary"

	"github.com/sparkhost/sparkhost/host/supervisor"
	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The echo module of the module benchmarks: each Req (1200, two u32) is
// answered with Rep (1201, the same two u32). host/testdata/plugins/echo2 is
// the same module as a plugin; host/testdata/echo2.lua in Lua.
var (
	EchoReq = wire.Schema{ID: 1200, Name: "req", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 8, MaxLen: 8, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}
	EchoRep = wire.Schema{ID: 1201, Name: "rep", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 8, MaxLen: 8, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true}
)

// GoEcho is the echo module in process (supervisor.Funcs): the baseline the Lua
// and plugin runtimes are measured against.
func GoEcho() supervisor.Spec {
	buf := make([]byte, 0, 8)
	f := &supervisor.Funcs{
		Manifest: module.Manifest{Name: "echo2", Version: "1", Messages: []wire.Schema{EchoReq, EchoRep}},
		OnEvent: func(h module.Host, ev *module.Event) {
			if ev.Kind != module.EventMessage {
				return
			}
			r := wire.NewReader(ev.Payload)
			a, b := r.U32(), r.U32()
			if r.HasError() {
				return
			}
			buf = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(buf[:0], a), b)
			h.Send(ev.Client, EchoRep.ID, buf)
		},
	}
	return supervisor.Spec{Source: "go:echo2", Kind: "go", New: func() (module.Module, error) { return f, nil }}
}
