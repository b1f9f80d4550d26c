package supervisor

import (
	"fmt"
	"strings"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// Words for a type's direction and channel, as the player console's
// `messages` and the schema export spell them.
var (
	directionWords = map[wire.Direction]string{wire.ClientToServer: "c2s", wire.ServerToClient: "s2c", wire.BothDirections: "both"}
	channelWords   = map[wire.Channel]string{wire.Unreliable: "unreliable", wire.Reliable: "reliable", wire.ReliableOrdered: "reliable_ordered"}
)

// typesText is the `module info` block naming the module's message types,
// one a line: "  1000 hello_greet c2s reliable fields: name str(32)" (an
// untyped one: "untyped 2..34 bytes").
func typesText(b *strings.Builder, types []wire.Schema) {
	if len(types) == 0 {
		b.WriteString("message types none\n")
		return
	}
	fmt.Fprintf(b, "message types %d\n", len(types))
	for i := range types {
		t := &types[i]
		fmt.Fprintf(b, "  %d %s %s %s ", t.ID, t.Name, directionWords[t.Direction], channelWords[t.Channel])
		if t.Typed() {
			b.WriteString("fields: " + wire.FieldsText(t.Fields) + "\n")
		} else {
			fmt.Fprintf(b, "untyped %d..%d bytes\n", t.MinLen, t.MaxLen)
		}
	}
}
