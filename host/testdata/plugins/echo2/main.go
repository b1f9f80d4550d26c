// Command echo2 is the plugin side of the module benchmark (host
// bench_test.go): it answers each req (1200: two u32) with rep (1201: the
// same two u32), like the in-process Go and Lua versions.
package main

import (
	"encoding/binary"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

type echo2 struct {
	plugin.Base
	h   module.Host
	buf []byte
}

func (e *echo2) Manifest() module.Manifest {
	return module.Manifest{Name: "echo2", Version: "1", Messages: []wire.Schema{
		{ID: 1200, Name: "req", Direction: wire.ClientToServer, Channel: wire.Reliable, MinLen: 8, MaxLen: 8, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
		{ID: 1201, Name: "rep", Direction: wire.ServerToClient, Channel: wire.Reliable, MinLen: 8, MaxLen: 8, StringFieldOffset: wire.NoStringFields, RequiresAdmitted: true},
	}}
}

func (e *echo2) Load(h module.Host) error { e.h = h; return nil }

func (e *echo2) OnMessage(c module.ClientInfo, t wire.MessageType, p []byte) {
	r := wire.NewReader(p)
	a, b := r.U32(), r.U32()
	if r.HasError() {
		return
	}
	e.buf = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(e.buf[:0], a), b)
	e.h.Send(c.ID, 1201, e.buf)
}

func main() { plugin.Serve(&echo2{}) }
