// Command typed is a test plugin with typed message schemas (host
// typed_test.go): it answers each move (1300: who str(16), pos vec3, tags
// array(4) of str(8)) with moved (1301: text str(64), count u8).
package main

import (
	"fmt"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/plugin"
)

var (
	moveFields = []wire.Field{
		{Name: "who", Kind: wire.KindStr, Max: 16},
		{Name: "pos", Kind: wire.KindVec3},
		{Name: "tags", Kind: wire.KindArray, Elem: wire.KindStr, ElemMax: 8, Max: 4},
	}
	movedFields = []wire.Field{{Name: "text", Kind: wire.KindStr, Max: 64}, {Name: "count", Kind: wire.KindU8}}
)

type typed struct {
	plugin.Base
	h     module.Host
	moves uint8
}

func (p *typed) Manifest() module.Manifest {
	return module.Manifest{Name: "typed", Version: "1", Messages: []wire.Schema{
		{ID: 1300, Name: "move", Direction: wire.ClientToServer, Channel: wire.Reliable, RequiresAdmitted: true, Fields: moveFields},
		{ID: 1301, Name: "moved", Direction: wire.ServerToClient, Channel: wire.Reliable, RequiresAdmitted: true, Fields: movedFields},
	}}
}

func (p *typed) Load(h module.Host) error { p.h = h; return nil }

func (p *typed) OnMessage(c module.ClientInfo, _ wire.MessageType, payload []byte) {
	v, err := wire.DecodeFields(moveFields, payload) // the server checked it already
	if err != nil {
		p.h.Log().Error("move that passed the schema does not decode", "err", err)
		return
	}
	p.moves++
	pos := v[1].(wire.Vec3)
	text := fmt.Sprintf("%s at %g,%g,%g with %d tags", v[0], pos.X, pos.Y, pos.Z, len(v[2].([]any)))
	out, err := wire.AppendFields(nil, movedFields, []any{text, p.moves})
	if err != nil {
		p.h.Log().Error("moved not encoded", "err", err)
		return
	}
	_ = p.h.Send(c.ID, 1301, out)
}

func main() { plugin.Serve(&typed{}) }
