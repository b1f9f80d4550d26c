package wire

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// NoStringFields as a Schema's StringFieldOffset means the payload is opaque
// binary with no string to screen (NO_STRING_FIELDS, §10).
const NoStringFields uint32 = 0xFFFFFFFF

// BuiltinOwner is the owner Lookup reports for the built-in types of §4.
const BuiltinOwner = "builtin"

// Schema is the receive rule of one message type (§4, §10).
type Schema struct {
	ID        MessageType
	Name      string
	Direction Direction // the directions it may travel: one or both bits
	Channel   Channel   // the one channel a sender must use and a receiver requires
	MinLen    uint32    // payload bytes, inclusive
	MaxLen    uint32    // payload bytes, inclusive; at most MaxPayload
	// StringFieldOffset is the payload offset of a NetBuffer string that must
	// be valid UTF-8 without NUL and lie within the payload, or NoStringFields.
	// For a built-in type it only documents its first screened str: built-ins
	// are checked by their own parser.
	StringFieldOffset uint32
	// RequiresAdmitted: the server accepts the type only from an admitted
	// (Connected) client. It says nothing about what a client accepts.
	RequiresAdmitted bool
	// Fields, when not nil, declares the payload's layout (a typed schema,
	// module types only): 1..MaxFields fields, in order, with nothing after
	// the last. Register derives MinLen, MaxLen and StringFieldOffset from
	// them (see Normalize) and Validate checks every field.
	Fields []Field
}

// builtins is the table of §4 for the transport's own types, indexed by
// type. Type 1 is the sealed ClientFinished; ConnectAccepted and
// ConnectRejected are listed with their plain-frame rules for Lookup, but
// Validate refuses them sealed. The game messages (types 7..18) are defined
// by the layer above (sim/msg) with DefineBuiltin: the transport knows
// nothing of games.
var builtins = [...]Schema{
	TypeConnect:         {TypeConnect, "ClientFinished", ClientToServer, Reliable, 4, 2 + MaxNameFieldLen + 2 + MaxTicketLen + MaxResumeExtensionLen, NoStringFields, false, nil},
	TypeConnectAccepted: {TypeConnectAccepted, "ConnectAccepted", ServerToClient, Unreliable, 155, 155, NoStringFields, false, nil},
	TypeConnectRejected: {TypeConnectRejected, "ConnectRejected", ServerToClient, Unreliable, 5, 5 + MaxDetailLen, 3, false, nil},
	TypeDisconnect:      {TypeDisconnect, "Disconnect", BothDirections, Unreliable, 3, 3 + MaxDetailLen, 1, true, nil},
	TypeHeartbeat:       {TypeHeartbeat, "Heartbeat", BothDirections, Unreliable, 8, 8, NoStringFields, true, nil},
	TypeAck:             {TypeAck, "Ack", BothDirections, Unreliable, 10, 10, NoStringFields, true, nil},
}

// v4Builtins are the transport's own types of protocol v4's data plane
// (§4.1, §5.6, §10.2); a v3 peer is never sent them.
var v4Builtins = [...]Schema{
	{TypeMessageRefused, "MessageRefused", BothDirections, Unreliable, MessageRefusedSize, MessageRefusedSize, NoStringFields, true, nil},
	{TypeModuleSchemas, "ModuleSchemas", ServerToClient, Reliable, 6, MaxPayload, NoStringFields, true, nil},
	{TypeModuleProtocols, "ModuleProtocols", ServerToClient, Reliable, moduleProtocolsMin, MaxPayload, NoStringFields, true, nil},
	{TypeResumeTicket, "ResumeTicket", ServerToClient, Reliable, resumeTicketMin, resumeTicketMin + MaxResumeTicketLen, NoStringFields, true, nil},
	{TypeResumeRequest, "ResumeRequest", ClientToServer, Reliable, ResumeRequestSize, ResumeRequestSize, NoStringFields, true, nil},
	{TypePathChallenge, "PathChallenge", BothDirections, Unreliable, PathChallengeSize, PathChallengeSize, NoStringFields, true, nil},
	{TypePathResponse, "PathResponse", BothDirections, Unreliable, PathResponseSize, PathResponseSize, NoStringFields, true, nil},
}

// transportSchema returns the rule of one of the transport's own sealed
// types (ConnectAccepted and ConnectRejected included, for Lookup).
func transportSchema(t MessageType) (Schema, bool) {
	if s := transportRule(t); s != nil {
		return *s, true
	}
	return Schema{}, false
}

// transportRule is transportSchema without the copy (Validate's, per
// message); the rule must not be modified.
func transportRule(t MessageType) *Schema {
	if t > 0 && int(t) < len(builtins) {
		return &builtins[t]
	}
	for i := range v4Builtins {
		if v4Builtins[i].ID == t {
			return &v4Builtins[i]
		}
	}
	return nil
}

// isTransportType reports whether t is one of the transport's own ids
// (CookieReply included), which DefineBuiltin may not take.
func isTransportType(t MessageType) bool {
	_, ok := transportSchema(t)
	return ok || t == TypeCookieReply
}

// IsTransportType reports whether t is one of the transport's own message
// types (the handshake, Disconnect, Heartbeat, Ack, CookieReply,
// MessageRefused, ModuleSchemas, ModuleProtocols, PathChallenge,
// PathResponse): the transport alone
// sends them; a game or a module never may.
func IsTransportType(t MessageType) bool { return isTransportType(t) }

// Errors of Registry.Register; the returned error wraps one of them and names
// the type, the module and, for a collision, the module that owns the type.
var (
	ErrReservedID = errors.New("wire: message ids below 1000 are reserved for built-in types")
	ErrTypeTaken  = errors.New("wire: message type already registered")
	ErrBadSchema  = errors.New("wire: invalid message schema")
)

// moduleType is a registered schema with the module that owns it. A
// built-in type defined with DefineBuiltin has owner BuiltinOwner and its
// structural check.
type moduleType struct {
	schema Schema
	owner  string
	check  func(travel Direction, payload []byte) error
	// gone marks a module type whose module unregistered it (unloaded,
	// crashed, reloading): it is not registered, but Validate can say
	// ErrTypeNotLoaded rather than ErrUnknownType, and the id is free.
	gone bool
	// failed marks a gone type whose module failed for good (Abandon):
	// Validate says ErrTypeFailed, so that nothing waits for it.
	failed bool
}

// Registry is the message-type table: the built-ins of §4 plus the UserDefined
// types modules register (§10). It is safe for concurrent use. Lookup and
// Validate run per packet on network goroutines, so they read an immutable
// snapshot through an atomic pointer without locking or allocating; Register
// and UnregisterOwner copy the snapshot, change the copy and publish it. The
// zero value is an empty registry ready for use.
type Registry struct {
	mu        sync.Mutex // serializes writers; readers never take it
	snap      atomic.Pointer[regSnap]
	rev       atomic.Uint32                             // changes of the module types (Revision)
	protocols atomic.Pointer[map[string]ModuleProtocol] // by owner (protocols.go)
}

// Revision counts the changes of the module types (every Register and every
// UnregisterOwner that removed something), from 0: the revision of the
// ModuleSchemas announcement.
func (r *Registry) Revision() uint32 { return r.rev.Load() }

// NewRegistry returns a registry holding only the built-in types.
func NewRegistry() *Registry { return new(Registry) }

// Register adds module type s owned by owner. It fails, naming the type and
// the modules involved, when: owner or s.Name is empty, or owner is
// BuiltinOwner; s.ID < 1000; s.ID is already registered (by another module, or
// by owner itself: re-registering, even the same schema, is refused so that a
// reloading module must unregister first and a duplicate id in one module is
// caught); the direction is not one or both of ClientToServer and
// ServerToClient; the channel is above ReliableOrdered; MinLen > MaxLen;
// MaxLen > MaxPayload; or StringFieldOffset is neither NoStringFields nor an
// offset whose 2-byte length prefix fits within MaxLen. A typed schema
// (Fields not nil) must also pass Normalize, which sets its size rules.
func (r *Registry) Register(owner string, s Schema) error {
	if err := checkSchema(owner, &s); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.types()
	if prev, ok := old[s.ID]; ok && !prev.gone {
		if prev.owner == owner {
			return fmt.Errorf("%w: module %q already registered type %d (%q); unregister the module before registering it again",
				ErrTypeTaken, owner, s.ID, prev.schema.Name)
		}
		return fmt.Errorf("%w: module %q cannot register type %d (%q): module %q owns it (as %q)",
			ErrTypeTaken, owner, s.ID, s.Name, prev.owner, prev.schema.Name)
	}
	next := make(map[MessageType]*moduleType, len(old)+1)
	for id, t := range old {
		next[id] = t
	}
	s.Fields = slices.Clone(s.Fields) // the registry's own copy: snapshots are immutable
	next[s.ID] = &moduleType{schema: s, owner: owner}
	r.snap.Store(newRegSnap(next))
	r.rev.Add(1)
	return nil
}

func checkSchema(owner string, s *Schema) error {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("%w: module %q, type %d (%q): %s", ErrBadSchema, owner, s.ID, s.Name, fmt.Sprintf(why, args...))
	}
	switch {
	case owner == "":
		return bad("the owning module has no name")
	case owner == BuiltinOwner:
		return bad("%q is reserved for the built-in types", BuiltinOwner)
	case s.ID < FirstUserDefined:
		return fmt.Errorf("%w: module %q cannot register type %d (%q): module types start at %d",
			ErrReservedID, owner, s.ID, s.Name, FirstUserDefined)
	case !ValidName([]byte(owner), MaxSchemaNameLen):
		return bad("the module name must be 1..%d bytes of UTF-8 without control characters, not all white space", MaxSchemaNameLen)
	case !ValidName([]byte(s.Name), MaxSchemaNameLen):
		return bad("the type name must be 1..%d bytes of UTF-8 without control characters, not all white space", MaxSchemaNameLen)
	}
	if s.Fields != nil {
		if len(s.Fields) == 0 {
			return bad("a typed message declares 1..%d fields", MaxFields)
		}
		if err := checkFieldDecl(s); err != nil {
			return bad("%v", err)
		}
	}
	return checkRules(owner, s)
}

// checkRules checks a schema's direction, channel and size rules.
func checkRules(owner string, s *Schema) error {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("%w: module %q, type %d (%q): %s", ErrBadSchema, owner, s.ID, s.Name, fmt.Sprintf(why, args...))
	}
	switch {
	case s.Name == "":
		return bad("the type has no name")
	case s.Direction != ClientToServer && s.Direction != ServerToClient && s.Direction != BothDirections:
		return bad("direction %d is not ClientToServer, ServerToClient or both", s.Direction)
	case s.Channel > ReliableOrdered:
		return bad("channel %d is not 0, 1 or 2", s.Channel)
	case s.MinLen > s.MaxLen:
		return bad("min_len %d is greater than max_len %d", s.MinLen, s.MaxLen)
	case s.MaxLen > MaxPayload:
		return bad("max_len %d is above MAX_PAYLOAD %d", s.MaxLen, MaxPayload)
	case s.StringFieldOffset != NoStringFields && uint64(s.StringFieldOffset)+2 > uint64(s.MaxLen):
		return bad("string_field_offset %d leaves no room for a 2-byte length within max_len %d", s.StringFieldOffset, s.MaxLen)
	}
	return nil
}

// DefineBuiltin adds a built-in type below FirstUserDefined that the
// transport does not know itself (the game messages of sim/msg), with the
// allocation-free structural check of its payload, which Validate runs
// after the size rule (travel is the direction the receiver listens in).
// It fails for an id of the transport's own table, an id already defined,
// an id of FirstUserDefined or above, or a schema that breaks the rules of
// Register. Built-in types are never removed.
func (r *Registry) DefineBuiltin(s Schema, check func(travel Direction, payload []byte) error) error {
	switch {
	case s.ID == 0 || s.ID >= FirstUserDefined:
		return fmt.Errorf("%w: built-in type %d (%q): built-in ids are 1..%d", ErrBadSchema, s.ID, s.Name, FirstUserDefined-1)
	case isTransportType(s.ID):
		return fmt.Errorf("%w: type %d is the transport's own %s", ErrTypeTaken, s.ID, s.ID)
	case check == nil:
		return fmt.Errorf("%w: built-in type %d (%q) has no payload check", ErrBadSchema, s.ID, s.Name)
	case s.Fields != nil:
		return fmt.Errorf("%w: built-in type %d (%q): built-in types are checked by their parser, not by fields", ErrBadSchema, s.ID, s.Name)
	}
	if err := checkRules(BuiltinOwner, &s); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.types()
	if prev, ok := old[s.ID]; ok {
		return fmt.Errorf("%w: built-in type %d is already defined (as %q)", ErrTypeTaken, s.ID, prev.schema.Name)
	}
	next := make(map[MessageType]*moduleType, len(old)+1)
	for id, t := range old {
		next[id] = t
	}
	next[s.ID] = &moduleType{schema: s, owner: BuiltinOwner, check: check}
	r.snap.Store(newRegSnap(next))
	return nil
}

// UnregisterOwner removes every type owner registered and returns their ids in
// ascending order (none: nil). A module's types go when it unloads, crashes or
// reloads (§10); until another module registers an id, Validate refuses a
// message of it with ErrTypeNotLoaded. Built-in types are never removed.
func (r *Registry) UnregisterOwner(owner string) []MessageType {
	if owner == BuiltinOwner {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.types()
	var gone []MessageType
	for id, t := range old {
		if t.owner == owner && !t.gone {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	next := make(map[MessageType]*moduleType, len(old))
	for id, t := range old {
		if t.owner == owner {
			c := *t // a snapshot's types are never modified
			c.gone, c.failed, c.check = true, false, nil
			t = &c
		}
		next[id] = t
	}
	r.snap.Store(newRegSnap(next))
	r.dropProtocolLocked(owner)
	r.rev.Add(1)
	slices.Sort(gone)
	return gone
}

// Abandon marks the types owner unregistered as those of a module that
// failed for good: until a module registers the id again, Validate refuses
// a message of it with ErrTypeFailed (refused NotLoaded at once, §10.3)
// rather than ErrTypeNotLoaded (held while the module restarts). Types
// still registered are left alone.
func (r *Registry) Abandon(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.types()
	next := make(map[MessageType]*moduleType, len(old))
	changed := false
	for id, t := range old {
		if t.owner == owner && t.gone && !t.failed {
			c := *t // a snapshot's types are never modified
			c.failed, changed = true, true
			t = &c
		}
		next[id] = t
	}
	if changed {
		r.snap.Store(newRegSnap(next))
	}
}

// types returns the current module snapshot; it must not be modified.
func (r *Registry) types() map[MessageType]*moduleType {
	if p := r.snap.Load(); p != nil {
		return p.byID
	}
	return nil
}

// regSnap is a published snapshot of the registry's types: the map, and
// for the ids most messages carry (the game's built-ins below denseTypes,
// the first module ids from FirstUserDefined) a table, so that Validate's
// lookup per message is an index, not a map's hash and probe.
type regSnap struct {
	byID map[MessageType]*moduleType
	low  [denseTypes]*moduleType // ids 0..denseTypes-1
	user [denseTypes]*moduleType // ids FirstUserDefined..+denseTypes-1
}

const denseTypes = 256

func newRegSnap(m map[MessageType]*moduleType) *regSnap {
	p := &regSnap{byID: m}
	for id, t := range m {
		switch {
		case id < denseTypes:
			p.low[id] = t
		case id >= FirstUserDefined && id-FirstUserDefined < denseTypes:
			p.user[id-FirstUserDefined] = t
		}
	}
	return p
}

// lookup returns the registered entry of t (gone or not), or nil.
func (r *Registry) lookup(t MessageType) *moduleType {
	p := r.snap.Load()
	switch {
	case p == nil:
		return nil
	case t < denseTypes:
		return p.low[t]
	case t >= FirstUserDefined && t-FirstUserDefined < denseTypes:
		return p.user[t-FirstUserDefined]
	}
	return p.byID[t]
}

// Lookup returns the schema of t and its owner (BuiltinOwner for the types of
// §4). For type 1 it returns the sealed ClientFinished rule.
func (r *Registry) Lookup(t MessageType) (s Schema, owner string, ok bool) {
	if s, ok := transportSchema(t); ok {
		return s, BuiltinOwner, true
	}
	mt := r.lookup(t)
	if mt == nil || mt.gone {
		return Schema{}, "", false
	}
	return mt.schema, mt.owner, true
}
