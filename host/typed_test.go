package host_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sparkhost/sparkhost/host/testplugin"
	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// TestPluginTypedSchemas: a Go plugin declares typed messages; the server
// derives their sizes, announces the fields to a client that knows nothing
// of the module, delivers a payload that matches them, and refuses (counted,
// told to the sender with MessageRefused) one whose array is over its count
// or whose str holds a NUL — both within the message's size bounds.
func TestPluginTypedSchemas(t *testing.T) {
	path := testplugin.Build(t, "./host/testdata/plugins/typed")
	srv, _ := startHost(t, withModules(path))
	c := dialAs(t, srv, "ann", gamemsg.NewRegistry())
	var move wire.ModuleSchema
	eventually(t, "the typed schemas announced", func() bool {
		m, ok := c.ModuleSchemas()
		if !ok || len(m.Types) != 2 {
			return false
		}
		move = m.Types[0]
		return true
	})
	wantFields := []wire.Field{
		{Name: "who", Kind: wire.KindStr, Max: 16},
		{Name: "pos", Kind: wire.KindVec3},
		{Name: "tags", Kind: wire.KindArray, Elem: wire.KindStr, ElemMax: 8, Max: 4},
	}
	if move.Name != "move" || move.Owner != "typed" || !reflect.DeepEqual(move.Fields, wantFields) ||
		move.MinLen != 2+12+2 || move.MaxLen != 18+12+2+4*10 || move.StringFieldOffset != 0 {
		t.Fatalf("announced %+v", move)
	}
	send := func(vals ...any) {
		t.Helper()
		p, err := wire.AppendFields(nil, wantFields, vals)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(1300, wire.Reliable, p); err != nil {
			t.Fatal(err)
		}
	}
	send("ann", wire.Vec3{X: 1, Y: 2, Z: 3}, []any{"a", "b"})
	waitMoved(t, c, "ann at 1,2,3 with 2 tags", 1)

	over := []byte{3, 0, 'b', 'o', 'b'}
	over = append(over, make([]byte, 12)...)
	over = append(over, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // 5 empty tags: over the count of 4
	nul := []byte{3, 0, 'b', 0, 'b'}
	nul = append(nul, make([]byte, 12)...)
	nul = append(nul, 0, 0)
	for _, p := range [][]byte{over, nul} {
		if err := c.Send(1300, wire.Reliable, p); err != nil {
			t.Fatal(err)
		}
	}
	send("bob", wire.Vec3{}, []any{})
	waitMoved(t, c, "bob at 0,0,0 with 0 tags", 2) // the refused ones never reached the plugin
	eventually(t, "both refusals counted on both sides", func() bool {
		return srv.Stats().Net.RefusedBy[wire.RefusedMalformed] == 2 && c.Stats().PeerRefusals == 2
	})
	// The operator sees the same declaration: module info names each type.
	info, err := srv.Exec("module info typed")
	if err != nil || !strings.Contains(info, "\n  1300 move c2s reliable fields: who str(16), pos vec3, tags array(4) of str(8)\n") {
		t.Errorf("module info typed: %v\n%s", err, info)
	}
}

// waitMoved waits for a moved message and checks it, decoding it with the
// announced schema.
func waitMoved(t *testing.T, c *netstack.Client, text string, count uint8) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for moved %q: %v", text, err)
		}
		if m.Header.Type != 1301 {
			continue
		}
		v, err := wire.DecodeFields([]wire.Field{{Name: "text", Kind: wire.KindStr, Max: 64}, {Name: "count", Kind: wire.KindU8}}, m.Payload)
		if err != nil || v[0] != text || v[1] != count {
			t.Fatalf("moved %v, %v; want %q, %d", v, err, text, count)
		}
		return
	}
}

// TestLuaTypedSchemaRefusesBadField: scripts/hello.lua's hello_greet is a
// typed str(32); a payload within its size bounds whose string holds a NUL,
// or that has a byte after the string, is refused (counted, and the v4
// sender is told); a good one is answered.
func TestLuaTypedSchemaRefusesBadField(t *testing.T) {
	srv, _ := startHost(t, withModules("../scripts/hello.lua"))
	c := dialAs(t, srv, "ann", gamemsg.NewRegistry())
	eventually(t, "the typed schemas announced", func() bool {
		m, ok := c.ModuleSchemas()
		return ok && len(m.Types) == 2 && m.Types[0].Typed()
	})
	for _, p := range [][]byte{{3, 0, 'a', 0, 'n'}, {1, 0, 'a', 'x'}} {
		if err := c.Send(1000, wire.Reliable, p); err != nil {
			t.Fatal(err)
		}
	}
	sendStr(t, c, 1000, "ann")
	waitStr(t, c, 1001, "Hello, ann! You are greeting number 1.")
	eventually(t, "both refusals counted on both sides", func() bool {
		return srv.Stats().Net.RefusedBy[wire.RefusedMalformed] == 2 && c.Stats().PeerRefusals == 2
	})
}
