package lua

import (
	"bytes"
	"log/slog"
	"math"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/sparkhost/sparkhost/module"
	"github.com/sparkhost/sparkhost/netstack/wire"
)

// The event hooks a script sets with spark.on_admitted(fn) and the like.
type hook int

const (
	hookAdmitted hook = iota
	hookLeft
	hookTick
	hookMatchStart
	hookMatchEnd
	hookMapChange
	hookPause
	hookResumed
	hookDrain
	numHooks
)

var hookNames = [numHooks]string{"on_admitted", "on_left", "on_tick", "on_match_start", "on_match_end", "on_map_change", "on_pause", "on_resumed", "on_drain"}

// Limits of what a module declares.
const (
	maxMessages   = 256
	maxCommands   = 64
	maxMsgNameLen = 64
	maxVersionLen = 64
	maxKVKey      = 256
	maxKVValue    = 64 << 10
)

// openSpark installs the global `spark` table: the bindings of this module.
func (m *Module) openSpark() {
	L := m.L
	spark := L.NewTable()
	L.SetFuncs(spark, map[string]lua.LGFunction{
		"module":     m.luaModule,
		"message":    m.luaMessage,
		"command":    m.luaCommand,
		"on_message": m.luaOnMessage,
		"send":       m.luaSend,
		"broadcast":  m.luaBroadcast,
		"kick":       m.luaKick,
		"writer":     m.luaWriter,
		"after":      m.luaAfter,
		"every":      m.luaEvery,
		"cancel":     m.luaCancel,
		"server":     m.luaServer,
		"client":     m.luaClient,
		"clients":    m.luaClients,
		"add_score":  m.luaAddScore,
		"set_area":   m.luaSetArea,
		"now":        m.luaNow,
	})
	for h := range numHooks {
		spark.RawSetString(hookNames[h], L.NewFunction(m.hookSetter(h)))
	}
	spark.RawSetString("kv", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"get": m.kvGet, "set": m.kvSet, "delete": m.kvDelete, "keys": m.kvKeys,
	}))
	logFn := func(level slog.Level) lua.LGFunction {
		return func(L *lua.LState) int { m.logArgs(L, level); return 0 }
	}
	spark.RawSetString("log", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"debug": logFn(slog.LevelDebug), "info": logFn(slog.LevelInfo),
		"warn": logFn(slog.LevelWarn), "error": logFn(slog.LevelError),
	}))
	m.openEntities(spark)
	L.SetGlobal("spark", spark)
	m.openBuffers()
}

const nameRule = "a name of lower-case letters, digits, '-', '_' or '.' starting with a letter (at most 32 bytes)"

func (m *Module) loadOnly(L *lua.LState, fn string) {
	if m.phase != phaseLoading {
		L.RaiseError("%s: only allowed while the module loads (at the top level of the file)", fn)
	}
}

// luaModule is spark.module{name = "tag", version = "1.0"}.
func (m *Module) luaModule(L *lua.LState) int {
	const fn = "spark.module"
	m.loadOnly(L, fn)
	f := fields{L: L, fn: fn, t: args{L: L, fn: fn}.table(1, "declaration")}
	f.only("name", "version", "match", "protocol", "oldest_protocol")
	if m.manifest.Name != "" {
		L.RaiseError("%s: the module is already declared as %q; call spark.module once", fn, m.manifest.Name)
	}
	name := f.str("name")
	if !module.ValidCommandName(name) {
		f.fail("name", nameRule)
	}
	version := ""
	if f.has("version") {
		if version = f.str("version"); len(version) > maxVersionLen {
			f.fail("version", "a string of at most 64 bytes")
		}
	}
	m.manifest.Name, m.manifest.Version = name, version
	// match = false: a world, not a match (module.Manifest.NoMatch).
	m.manifest.NoMatch = !f.boolean("match", true)
	// protocol = 2, oldest_protocol = 1: the module's message protocol
	// (module.Manifest.Protocol, docs/protocol.md §10.4).
	if f.has("protocol") {
		m.manifest.Protocol = uint16(f.integer("protocol", 1, 0xFFFF))
	}
	if f.has("oldest_protocol") {
		m.manifest.OldestProtocol = uint16(f.integer("oldest_protocol", 1, int64(max(m.manifest.Protocol, 1))))
	}
	return 0
}

var (
	directions = map[string]wire.Direction{"c2s": wire.ClientToServer, "s2c": wire.ServerToClient, "both": wire.BothDirections}
	channels   = map[string]wire.Channel{"unreliable": wire.Unreliable, "reliable": wire.Reliable, "ordered": wire.ReliableOrdered}
)

// luaMessage is spark.message{id = 1100, name = "tag_tag", direction =
// "c2s", channel = "reliable", min = 4, max = 4, string_offset = nil,
// requires_admitted = true}, or with fields = {{"text", "str", 32}, ...}
// instead of the sizes (typed.go); it returns the id.
func (m *Module) luaMessage(L *lua.LState) int {
	const fn = "spark.message"
	m.loadOnly(L, fn)
	f := fields{L: L, fn: fn, t: args{L: L, fn: fn}.table(1, "declaration")}
	f.only("id", "name", "direction", "channel", "min", "max", "string_offset", "requires_admitted", "fields")
	id := wire.MessageType(f.integer("id", int64(wire.FirstUserDefined), math.MaxUint16))
	if old, dup := m.schemas[id]; dup {
		L.RaiseError("%s: message id %d is already declared (as %q)", fn, id, old.Name)
	}
	if len(m.schemas) >= maxMessages {
		L.RaiseError("%s: a module may declare at most %d messages", fn, maxMessages)
	}
	name := f.str("name")
	if name == "" || len(name) > maxMsgNameLen {
		f.fail("name", "a non-empty string of at most 64 bytes")
	}
	dir, ok := directions[stringField(f, "direction")]
	if !ok {
		f.fail("direction", `"c2s", "s2c" or "both"`)
	}
	ch, ok := channels[stringField(f, "channel")]
	if !ok {
		f.fail("channel", `"unreliable", "reliable" or "ordered"`)
	}
	s := wire.Schema{
		ID: id, Name: name, Direction: dir, Channel: ch,
		RequiresAdmitted: f.boolean("requires_admitted", true),
	}
	if f.has("fields") {
		m.typedSizes(f, &s)
	} else {
		m.untypedSizes(f, &s)
	}
	m.schemas[id] = s
	m.manifest.Messages = append(m.manifest.Messages, s)
	L.Push(lua.LNumber(id))
	return 1
}

// untypedSizes reads a size-only declaration's min, max and string_offset.
func (m *Module) untypedSizes(f fields, s *wire.Schema) {
	minLen := int64(0)
	if f.has("min") {
		minLen = f.integer("min", 0, wire.MaxPayload)
	}
	maxLen := f.integer("max", 0, wire.MaxPayload)
	if minLen > maxLen {
		f.L.RaiseError("%s: field 'min' (%d) is greater than field 'max' (%d)", f.fn, minLen, maxLen)
	}
	offset := wire.NoStringFields
	if f.has("string_offset") {
		if maxLen < 2 {
			f.L.RaiseError("%s: field 'string_offset' needs room for a 2-byte length: 'max' is %d", f.fn, maxLen)
		}
		offset = uint32(f.integer("string_offset", 0, maxLen-2))
	}
	s.MinLen, s.MaxLen, s.StringFieldOffset = uint32(minLen), uint32(maxLen), offset
}

// typedSizes reads a typed declaration's fields; min, max and string_offset
// are derived from them and, when also given, must agree.
func (m *Module) typedSizes(f fields, s *wire.Schema) {
	s.Fields = luaFields(f.L, f.fn, f.t.RawGetString("fields"))
	if f.has("min") {
		s.MinLen = uint32(f.integer("min", 0, wire.MaxPayload))
	}
	if f.has("max") {
		s.MaxLen = uint32(f.integer("max", 0, wire.MaxPayload))
	}
	if f.has("string_offset") {
		s.StringFieldOffset = uint32(f.integer("string_offset", 0, wire.MaxPayload))
	}
	if err := s.Normalize(); err != nil {
		f.L.RaiseError("%s: %v", f.fn, err)
	}
}

func stringField(f fields, field string) string {
	s, _ := f.t.RawGetString(field).(lua.LString)
	return string(s)
}

// luaCommand is spark.command(name, usage, help, fn(args...) → string).
func (m *Module) luaCommand(L *lua.LState) int {
	const fn = "spark.command"
	m.loadOnly(L, fn)
	a := args{L: L, fn: fn}
	name := a.str(1, "name")
	if !module.ValidCommandName(name) {
		a.fail(1, "name", nameRule)
	}
	usage := a.optStr(2, "usage", "")
	help := a.optStr(3, "help", "")
	f := a.function(4, "fn")
	if _, dup := m.commands[name]; dup {
		L.RaiseError("%s: command %q is already declared", fn, name)
	}
	if len(m.commands) >= maxCommands {
		L.RaiseError("%s: a module may declare at most %d commands", fn, maxCommands)
	}
	m.commands[name] = f
	m.manifest.Commands = append(m.manifest.Commands, module.CommandSpec{Name: name, Usage: usage, Help: help})
	return 0
}

func (m *Module) hookSetter(h hook) lua.LGFunction {
	fn := "spark." + hookNames[h]
	return func(L *lua.LState) int {
		m.hooks[h] = args{L: L, fn: fn}.optFunction(1, "fn")
		return 0
	}
}

// luaOnMessage is spark.on_message(type, fn(client, reader, type)); fn nil
// removes the handler.
func (m *Module) luaOnMessage(L *lua.LState) int {
	a := args{L: L, fn: "spark.on_message"}
	id := wire.MessageType(a.integer(1, "type", 0, math.MaxUint16))
	s, ok := m.schemas[id]
	if !ok {
		a.fail(1, "type", "a message id declared with spark.message")
	}
	if s.Direction&wire.ClientToServer == 0 {
		L.RaiseError("spark.on_message: argument #1 (type) is message %d (%q), which only the server sends; declare it with direction = \"c2s\" or \"both\" to receive it",
			id, s.Name)
	}
	if f := a.optFunction(2, "fn"); f != nil {
		m.handlers[id] = f
	} else {
		delete(m.handlers, id)
	}
	return 0
}

// sendSchema checks argument n as a message type the module may send.
func (m *Module) sendSchema(a args, n int) wire.Schema {
	id, ok := a.L.Get(n).(lua.LNumber)
	s, known := m.schemas[wire.MessageType(id)]
	if !ok || !known || float64(id) != float64(s.ID) {
		a.fail(n, "type", "a registered message id")
	}
	if s.Direction&wire.ServerToClient == 0 {
		a.L.RaiseError("%s: argument #%d (type) is message %d (%q), which only clients send; declare it with direction = \"s2c\" or \"both\" to send it",
			a.fn, n, s.ID, s.Name)
	}
	return s
}

// payload checks argument n as a payload of s: a string or a writer, of a
// length the schema accepts. The bytes are a copy the host may keep.
func (m *Module) payload(a args, n int, s wire.Schema) []byte {
	var p []byte
	switch v := a.L.Get(n).(type) {
	case lua.LString:
		p = []byte(v)
	case *lua.LUserData:
		w, ok := v.Value.(*payloadWriter)
		if !ok {
			a.fail(n, "payload", "a string or a spark.writer()")
		}
		p = bytes.Clone(w.b)
		if p == nil {
			p = []byte{}
		}
	default:
		a.fail(n, "payload", "a string or a spark.writer()")
	}
	if uint32(len(p)) < s.MinLen || uint32(len(p)) > s.MaxLen {
		a.L.RaiseError("%s: argument #%d (payload) is %d bytes; message %d (%q) takes %d..%d bytes",
			a.fn, n, len(p), s.ID, s.Name, s.MinLen, s.MaxLen)
	}
	if s.Typed() {
		if err := wire.CheckFields(s.Fields, p); err != nil {
			a.L.RaiseError("%s: argument #%d (payload) does not match the fields of message %d (%q) — %s: %v",
				a.fn, n, s.ID, s.Name, wire.FieldsText(s.Fields), err)
		}
	}
	return p
}

// result pushes true, or false and the error's text: a send to a client who
// just left is not a script error.
func result(L *lua.LState, err error) int {
	if err != nil {
		L.Push(lua.LFalse)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	L.Push(lua.LTrue)
	return 1
}

// luaSend is spark.send(client, type, payload) → true | false, err.
func (m *Module) luaSend(L *lua.LState) int {
	a := args{L: L, fn: "spark.send"}
	client := a.client(1)
	s := m.sendSchema(a, 2)
	p := m.payload(a, 3, s)
	return result(L, m.hostCall(func() error { return m.host.Send(client, s.ID, p) }))
}

// luaBroadcast is spark.broadcast(type, payload[, except_client]).
func (m *Module) luaBroadcast(L *lua.LState) int {
	a := args{L: L, fn: "spark.broadcast"}
	s := m.sendSchema(a, 1)
	p := m.payload(a, 2, s)
	if L.Get(3) != lua.LNil {
		except := a.client(3)
		return result(L, m.hostCall(func() error { return m.host.BroadcastExcept(except, s.ID, p) }))
	}
	return result(L, m.hostCall(func() error { return m.host.Broadcast(s.ID, p) }))
}

// luaKick is spark.kick(client[, detail]).
func (m *Module) luaKick(L *lua.LState) int {
	a := args{L: L, fn: "spark.kick"}
	client := a.client(1)
	detail := a.optStr(2, "detail", "")
	if len(detail) > wire.MaxDetailLen {
		a.fail(2, "detail", "a string of at most 256 bytes")
	}
	return result(L, m.hostCall(func() error { return m.host.Kick(client, detail) }))
}

func (m *Module) luaServer(L *lua.LState) int {
	info := m.host.Server()
	t := L.CreateTable(0, 8)
	t.RawSetString("name", lua.LString(info.Name))
	t.RawSetString("map", lua.LString(info.Map))
	t.RawSetString("mode", lua.LString(info.Mode.String()))
	t.RawSetString("match_state", lua.LString(info.MatchState.String()))
	t.RawSetString("tick_rate", lua.LNumber(info.TickRate))
	t.RawSetString("tick", lua.LNumber(info.Tick))
	t.RawSetString("players", lua.LNumber(info.Players))
	t.RawSetString("max_players", lua.LNumber(info.MaxPlayers))
	t.RawSetString("draining", lua.LBool(info.Draining))
	if info.Draining {
		t.RawSetString("drain_seconds", lua.LNumber(secondsUntil(info.DrainDeadline, m.host.Now())))
	}
	if r := info.Room; r.ID != 0 {
		room := L.CreateTable(0, 6)
		room.RawSetString("id", lua.LNumber(r.ID))
		room.RawSetString("name", lua.LString(r.Name))
		room.RawSetString("mode", lua.LString(r.Mode))
		room.RawSetString("owner", lua.LNumber(r.Owner))
		room.RawSetString("capacity", lua.LNumber(r.Capacity))
		room.RawSetString("state", lua.LString(r.State.String()))
		t.RawSetString("room", room)
	}
	L.Push(t)
	return 1
}

// secondsUntil is how many seconds lie between now and t (0 when t has
// passed or is unset).
func secondsUntil(t, now time.Time) float64 {
	if t.IsZero() || !t.After(now) {
		return 0
	}
	return t.Sub(now).Seconds()
}

func clientTable(L *lua.LState, c module.ClientInfo) *lua.LTable {
	t := L.CreateTable(0, 4)
	t.RawSetString("id", lua.LNumber(c.ID))
	t.RawSetString("name", lua.LString(c.Name))
	t.RawSetString("ping_ms", lua.LNumber(c.Ping.Milliseconds()))
	t.RawSetString("rtt_var_ms", lua.LNumber(c.Link.RTTVariance.Seconds()*1000))
	t.RawSetString("loss", lua.LNumber(c.Link.Loss))
	t.RawSetString("bandwidth", lua.LNumber(c.Link.Bandwidth))
	t.RawSetString("send_rate", lua.LNumber(c.Link.SendRate))
	t.RawSetString("queue_delay_ms", lua.LNumber(c.Link.QueueDelay.Seconds()*1000))
	t.RawSetString("backlogged", lua.LBool(c.Link.Backlogged))
	addr := ""
	if c.Addr.IsValid() {
		addr = c.Addr.String()
	}
	t.RawSetString("addr", lua.LString(addr))
	return t
}

// luaClient is spark.client(id) → {id, name, ping_ms, addr, and the link:
// rtt_var_ms, loss, bandwidth, send_rate, queue_delay_ms, backlogged} or
// nil.
func (m *Module) luaClient(L *lua.LState) int {
	id := args{L: L, fn: "spark.client"}.client(1)
	c, ok := m.host.Client(id)
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(clientTable(L, c))
	return 1
}

// luaClients is spark.clients() → an array of client tables.
func (m *Module) luaClients(L *lua.LState) int {
	cs := m.host.Clients()
	t := L.CreateTable(len(cs), 0)
	for _, c := range cs {
		t.Append(clientTable(L, c))
	}
	L.Push(t)
	return 1
}

// luaAddScore is spark.add_score(client, score[, kills[, deaths]]).
func (m *Module) luaAddScore(L *lua.LState) int {
	a := args{L: L, fn: "spark.add_score"}
	client := a.client(1)
	score := a.integer(2, "score", math.MinInt32, math.MaxInt32)
	kills := a.optInteger(3, "kills", math.MinInt32, math.MaxInt32, 0)
	deaths := a.optInteger(4, "deaths", math.MinInt32, math.MaxInt32, 0)
	m.host.AddScore(client, int32(score), int32(kills), int32(deaths))
	return 0
}

// luaSetArea is spark.set_area(name): the area a module of match = false
// announces beside its name ("" clears it). A bad name raises an error.
func (m *Module) luaSetArea(L *lua.LState) int {
	if err := m.host.SetArea(args{L: L, fn: "spark.set_area"}.str(1, "name")); err != nil {
		L.RaiseError("spark.set_area: %v", err)
	}
	return 0
}

// luaNow is spark.now(): the module's time in seconds, the sum of the tick
// steps it has run (timers use the same clock).
func (m *Module) luaNow(L *lua.LState) int {
	L.Push(lua.LNumber(m.clock.Seconds()))
	return 1
}

func (m *Module) kv(L *lua.LState, fn string) module.KV {
	kv, err := m.host.KV()
	if err != nil {
		L.RaiseError("%s: %v", fn, err)
	}
	return kv
}

func kvKey(a args) string {
	k := a.str(1, "key")
	if k == "" || len(k) > maxKVKey {
		a.fail(1, "key", "a non-empty string of at most 256 bytes")
	}
	return k
}

// kvGet is spark.kv.get(key) → string or nil.
func (m *Module) kvGet(L *lua.LState) int {
	a := args{L: L, fn: "spark.kv.get"}
	v, ok := m.kv(L, a.fn).Get(kvKey(a))
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LString(v))
	return 1
}

// kvSet is spark.kv.set(key, value); value is a string (or a number, stored
// as its string). A failed write raises an error.
func (m *Module) kvSet(L *lua.LState) int {
	a := args{L: L, fn: "spark.kv.set"}
	key := kvKey(a)
	var value string
	switch v := L.Get(2).(type) {
	case lua.LString, lua.LNumber:
		value = v.String()
	default:
		a.fail(2, "value", "a string or a number")
	}
	if len(value) > maxKVValue {
		L.RaiseError("spark.kv.set: argument #2 (value) is %d bytes, more than the limit of %d", len(value), maxKVValue)
	}
	if err := m.kv(L, a.fn).Set(key, value); err != nil {
		L.RaiseError("spark.kv.set: %v", err)
	}
	return 0
}

// kvDelete is spark.kv.delete(key).
func (m *Module) kvDelete(L *lua.LState) int {
	a := args{L: L, fn: "spark.kv.delete"}
	if err := m.kv(L, a.fn).Delete(kvKey(a)); err != nil {
		L.RaiseError("spark.kv.delete: %v", err)
	}
	return 0
}

// kvKeys is spark.kv.keys() → a sorted array of the keys.
func (m *Module) kvKeys(L *lua.LState) int {
	keys := slices.Sorted(slices.Values(m.kv(L, "spark.kv.keys").Keys()))
	t := L.CreateTable(len(keys), 0)
	for _, k := range keys {
		t.Append(lua.LString(k))
	}
	L.Push(t)
	return 1
}

// deliver runs the handler of one event. It returns true when the budget
// ran out and the Step must stop.
func (m *Module) deliver(ev *module.Event) (stop bool) {
	switch ev.Kind {
	case module.EventAdmitted:
		if fn := m.hooks[hookAdmitted]; fn != nil {
			return m.run(site{what: "on_admitted"}, fn, lua.LNumber(ev.Client), lua.LString(ev.Name), lua.LBool(ev.Present))
		}
	case module.EventLeft:
		if fn := m.hooks[hookLeft]; fn != nil {
			reason := ev.Reason.String()
			if ev.Reason == wire.DisconnectUnknown {
				reason = ev.Leave.String() // it left the room, connected: "left", "kicked", "closed"
			}
			return m.run(site{what: "on_left"}, fn, lua.LNumber(ev.Client), lua.LString(reason))
		}
	case module.EventMessage:
		if fn := m.handlers[ev.Type]; fn != nil {
			return m.run(site{what: "on_message", id: int64(ev.Type)}, fn,
				lua.LNumber(ev.Client), m.newReader(ev.Payload), lua.LNumber(ev.Type))
		}
	case module.EventMatchStart:
		if fn := m.hooks[hookMatchStart]; fn != nil {
			ms := &ev.Match
			return m.run(site{what: "on_match_start"}, fn, lua.LString(ms.Map), lua.LNumber(ms.Round),
				lua.LString(ms.Mode.String()), lua.LNumber(ms.TimeLimit), lua.LNumber(ms.ScoreLimit))
		}
	case module.EventMatchEnd:
		if fn := m.hooks[hookMatchEnd]; fn != nil {
			me := &ev.MatchEnd
			return m.run(site{what: "on_match_end"}, fn, lua.LString(me.Reason.String()),
				lua.LNumber(me.Winner), lua.LNumber(me.WinnerScore))
		}
	case module.EventMapChange:
		if fn := m.hooks[hookMapChange]; fn != nil {
			return m.run(site{what: "on_map_change"}, fn, lua.LString(ev.Map), lua.LNumber(ev.MapIndex))
		}
	case module.EventInput:
		if fn := m.inputHook; fn != nil {
			return m.run(site{what: "on_input"}, fn, lua.LNumber(ev.Client), inputTable(m.L, &ev.Input))
		}
	case module.EventPause:
		if fn := m.hooks[hookPause]; fn != nil {
			return m.run(site{what: "on_pause"}, fn, lua.LBool(ev.Paused))
		}
	case module.EventResumed:
		if fn := m.hooks[hookResumed]; fn != nil {
			return m.run(site{what: "on_resumed"}, fn, lua.LNumber(ev.Client), lua.LString(ev.Name))
		}
	case module.EventDrain:
		if fn := m.hooks[hookDrain]; fn != nil {
			return m.run(site{what: "on_drain"}, fn, lua.LBool(ev.Draining), lua.LNumber(secondsUntil(ev.DrainDeadline, m.host.Now())))
		}
	}
	return false
}
