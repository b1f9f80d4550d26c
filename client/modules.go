package client

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sparkhost/sparkhost/netstack"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The console speaks any module: `messages` lists the module types the
// server announced (ModuleSchemas, docs/protocol.md §10.2), `send` encodes
// one from its declared fields (or hex for an untyped one), and a module
// message that no module hook handles prints decoded as
// `recv NAME field=value ...`, so wait can match it.

// schemaWait bounds how long messages and send wait for the table after
// connect.
const schemaWait = 3 * time.Second

func moduleCommands() []Command {
	return []Command{
		{Name: "messages", Usage: "messages", Help: "list the module message types the server announced: id, name, owner, direction, channel, fields", Run: cmdMessages},
		{Name: "send", Usage: "send NAME [FIELD=]VALUE... | send NAME HEX",
			Help: "send a module message: typed fields by name or in order (str quoted, vec3 x,y,z, arrays a,b,c, bytes hex), hex for an untyped one",
			Run:  cmdSend},
	}
}

// announced returns the server's table of module types, or an error that
// says why there is none.
func (c *Console) announced(cmd string) (*netstack.Client, []wire.ModuleSchema, error) {
	conn, err := c.current(cmd)
	if err != nil {
		return nil, nil, err
	}
	m, ok := conn.client.ModuleSchemas()
	// A v4 server sends the table right after admission: a command typed
	// (or scripted) at once after connect waits a moment for it.
	deadline := time.Now().Add(schemaWait)
	for !ok && conn.client.Protocol() >= wire.ProtocolVersion4 && time.Now().Before(deadline) {
		select {
		case <-c.context().Done():
			return nil, nil, c.context().Err()
		case <-conn.client.Done():
			return nil, nil, fmt.Errorf("%s: %w", cmd, ErrNotConnected)
		case <-time.After(10 * time.Millisecond):
		}
		m, ok = conn.client.ModuleSchemas()
	}
	if !ok {
		return conn.client, nil, fmt.Errorf("%s: the server has not announced its module types (protocol v%d; v3 servers never do)", cmd, conn.client.Protocol())
	}
	return conn.client, m.Types, nil
}

func cmdMessages(c *Console, args []string) error {
	if len(args) != 0 {
		return usageError("messages")
	}
	_, types, err := c.announced("messages")
	if err != nil {
		return err
	}
	if len(types) == 0 {
		c.println("messages: none")
		return nil
	}
	for _, t := range types {
		c.println(messageLine(&t))
	}
	return nil
}

var (
	directionWords = map[wire.Direction]string{wire.ClientToServer: "c2s", wire.ServerToClient: "s2c", wire.BothDirections: "both"}
	channelWords   = map[wire.Channel]string{wire.Unreliable: "unreliable", wire.Reliable: "reliable", wire.ReliableOrdered: "reliable_ordered"}
)

// messageLine renders "message 1000 hello_greet owner hello c2s reliable
// fields: name str(32)" (untyped: "untyped 2..34 bytes").
func messageLine(t *wire.ModuleSchema) string {
	s := fmt.Sprintf("message %d %s owner %s %s %s ", t.ID, t.Name, t.Owner, directionWords[t.Direction], channelWords[t.Channel])
	if t.Typed() {
		return s + "fields: " + wire.FieldsText(t.Fields)
	}
	return s + fmt.Sprintf("untyped %d..%d bytes", t.MinLen, t.MaxLen)
}

func cmdSend(c *Console, args []string) error {
	if len(args) == 0 {
		return usageError("send NAME [FIELD=]VALUE... | send NAME HEX")
	}
	cl, types, err := c.announced("send")
	if err != nil {
		return err
	}
	t, ok := findType(types, args[0])
	if !ok {
		return fmt.Errorf("send: the server announced no message %q; messages lists them", args[0])
	}
	if t.Direction&wire.ClientToServer == 0 {
		return fmt.Errorf("send: %s travels only from the server to clients", t.Name)
	}
	var payload []byte
	if t.Typed() {
		payload, err = encodeArgs(&t, args[1:])
	} else {
		payload, err = hex.DecodeString(strings.Join(args[1:], ""))
		if err == nil && (uint32(len(payload)) < t.MinLen || uint32(len(payload)) > t.MaxLen) {
			err = fmt.Errorf("%d bytes; %s takes %d..%d", len(payload), t.Name, t.MinLen, t.MaxLen)
		}
	}
	if err != nil {
		return fmt.Errorf("send %s: %w", t.Name, err)
	}
	if err := cl.Send(t.ID, t.Channel, payload); err != nil {
		return fmt.Errorf("send %s: %w", t.Name, err)
	}
	c.println(fmt.Sprintf("sent %s (%d bytes)", t.Name, len(payload)))
	return nil
}

// findType finds an announced type by name or id.
func findType(types []wire.ModuleSchema, key string) (wire.ModuleSchema, bool) {
	id, err := strconv.ParseUint(key, 10, 16)
	for _, t := range types {
		if t.Name == key || err == nil && uint64(t.ID) == id {
			return t, true
		}
	}
	return wire.ModuleSchema{}, false
}

// encodeArgs encodes a typed message from FIELD=VALUE words and, for the
// fields not named, the remaining words in declaration order.
func encodeArgs(t *wire.ModuleSchema, args []string) ([]byte, error) {
	texts := make([]*string, len(t.Fields))
	var positional []string
	for _, a := range args {
		if i := namedField(t.Fields, a); i >= 0 {
			if texts[i] != nil {
				return nil, fmt.Errorf("field %s given twice", t.Fields[i].Name)
			}
			v := a[len(t.Fields[i].Name)+1:]
			texts[i] = &v
			continue
		}
		positional = append(positional, a)
	}
	vals := make([]any, len(t.Fields))
	for i := range t.Fields {
		f := &t.Fields[i]
		if texts[i] == nil {
			if len(positional) == 0 {
				return nil, fmt.Errorf("no value for field %s (%s); fields: %s", f.Name, wire.FieldsText(t.Fields[i:i+1]), wire.FieldsText(t.Fields))
			}
			texts[i], positional = &positional[0], positional[1:]
		}
		v, err := parseField(f, *texts[i])
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		vals[i] = v
	}
	if len(positional) > 0 {
		return nil, fmt.Errorf("%d values more than the fields (%s)", len(positional), wire.FieldsText(t.Fields))
	}
	return wire.AppendFields(nil, t.Fields, vals)
}

// namedField returns the index of the field a names as "FIELD=...", or -1.
func namedField(fields []wire.Field, a string) int {
	name, _, ok := strings.Cut(a, "=")
	if !ok {
		return -1
	}
	for i := range fields {
		if fields[i].Name == name {
			return i
		}
	}
	return -1
}

// parseField parses one field's console text.
func parseField(f *wire.Field, s string) (any, error) {
	if f.Kind != wire.KindArray {
		return parseValue(f.Kind, s)
	}
	elems := []any{}
	if s == "" {
		return elems, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		v, err := parseValue(f.Elem, part)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", len(elems)+1, err)
		}
		elems = append(elems, v)
	}
	return elems, nil
}

func parseValue(k wire.Kind, s string) (any, error) {
	switch k {
	case wire.KindU8, wire.KindU16, wire.KindU32:
		bits := map[wire.Kind]int{wire.KindU8: 8, wire.KindU16: 16, wire.KindU32: 32}[k]
		n, err := strconv.ParseUint(s, 0, bits)
		if err != nil {
			return nil, fmt.Errorf("%q is not a %s (0..%d)", s, k, uint64(1)<<bits-1)
		}
		switch k {
		case wire.KindU8:
			return uint8(n), nil
		case wire.KindU16:
			return uint16(n), nil
		}
		return uint32(n), nil
	case wire.KindI32:
		n, err := strconv.ParseInt(s, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not an i32", s)
		}
		return int32(n), nil
	case wire.KindF32:
		return parseF32(s)
	case wire.KindVec3:
		parts := strings.Split(s, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q is not a vec3; write x,y,z", s)
		}
		var v [3]float32
		for i, p := range parts {
			f, err := parseF32(p)
			if err != nil {
				return nil, err
			}
			v[i] = f.(float32)
		}
		return wire.Vec3{X: v[0], Y: v[1], Z: v[2]}, nil
	case wire.KindStr:
		return s, nil
	case wire.KindBytes:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not hex bytes", s)
		}
		return b, nil
	}
	return nil, fmt.Errorf("kind %s has no console form", k)
}

func parseF32(s string) (any, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%q is not a finite number", s)
	}
	return float32(f), nil
}

// printModule prints a module message no hook handles: decoded with its
// announced fields, else its payload in hex.
func (c *Console) printModule(cl *netstack.Client, m netstack.Message) {
	if m.Header.Type < wire.FirstUserDefined {
		return
	}
	c.mu.Lock()
	hooked := len(c.hooks[m.Header.Type]) > 0
	c.mu.Unlock()
	if hooked {
		return // the module's own console code prints it
	}
	name := strconv.Itoa(int(m.Header.Type))
	if table, ok := cl.ModuleSchemas(); ok {
		if t, ok := findType(table.Types, name); ok {
			if t.Typed() {
				if vals, err := wire.DecodeFields(t.Fields, m.Payload); err == nil {
					c.Printf("%s", "recv "+t.Name+" "+valuesText(t.Fields, vals))
					return
				}
			}
			name = t.Name
		}
	}
	c.Printf("recv %s %s", name, hexOrEmpty(m.Payload))
}

func hexOrEmpty(p []byte) string {
	if len(p) == 0 {
		return "(empty)"
	}
	return hex.EncodeToString(p)
}

// valuesText renders decoded fields as `name="ann" hp=3 pos=1,2,3
// ids=[1,2]`; strs are Go-quoted.
func valuesText(fields []wire.Field, vals []any) string {
	parts := make([]string, len(fields))
	for i := range fields {
		parts[i] = fields[i].Name + "=" + valueText(vals[i])
	}
	return strings.Join(parts, " ")
}

func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []byte:
		return hexOrEmpty(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case wire.Vec3:
		return valueText(x.X) + "," + valueText(x.Y) + "," + valueText(x.Z)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = valueText(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(v)
}

// ServerSchemas connects to addr as name, waits for the server's table of
// module types (protocol v4) and disconnects: `sparkhost schema export
// --server`. It fails if the table does not arrive before ctx ends.
func (c *Console) ServerSchemas(ctx context.Context, addr, name string) (wire.ModuleSchemas, error) {
	if err := cmdConnect(c, []string{addr, name}); err != nil {
		return wire.ModuleSchemas{}, err
	}
	defer func() { _ = cmdDisconnect(c, nil) }()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		cl := c.Client()
		if cl == nil {
			return wire.ModuleSchemas{}, errors.New("the server closed the connection before announcing its module types")
		}
		if m, ok := cl.ModuleSchemas(); ok {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return wire.ModuleSchemas{}, fmt.Errorf("no module types announced within the timeout (is the server protocol v4?): %w", ctx.Err())
		case <-t.C:
		}
	}
}
