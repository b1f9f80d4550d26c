package gamemsg

import "github.com/sparkhost/sparkhost/netstack/wire"

// EntityDestroy is the payload of EntityDestroy (type 8): the entity is gone.
type EntityDestroy struct {
	EntityID uint32
}

// AppendEntityDestroy appends the 4-byte encoding of m to dst.
func AppendEntityDestroy(dst []byte, m *EntityDestroy) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.EntityID)
	return w.Bytes()
}

// ParseEntityDestroy parses an EntityDestroy payload (exactly 4 bytes).
func ParseEntityDestroy(p []byte) (EntityDestroy, error) {
	r := wire.NewReader(p)
	m := EntityDestroy{EntityID: r.U32()}
	if err := wire.Finish(&r); err != nil {
		return EntityDestroy{}, err
	}
	return m, nil
}

// EntityRPC is the payload of EntityRPC (type 10): a call of procedure RPC on
// an entity, with arguments whose format the owning module defines.
type EntityRPC struct {
	EntityID uint32
	RPC      uint16
	Args     []byte // opaque to the protocol; a copy, not the receive buffer
}

// AppendEntityRPC appends the encoding of m (6 + len(Args) bytes) to dst.
func AppendEntityRPC(dst []byte, m *EntityRPC) []byte {
	w := wire.AppendWriter(dst)
	w.U32(m.EntityID)
	w.U16(m.RPC)
	w.Raw(m.Args)
	return w.Bytes()
}

// ParseEntityRPC parses an EntityRPC payload (at least 6 bytes).
func ParseEntityRPC(p []byte) (EntityRPC, error) {
	r := wire.NewReader(p)
	m := EntityRPC{EntityID: r.U32(), RPC: r.U16()}
	args := r.Bytes(r.Remaining())
	if err := wire.Finish(&r); err != nil {
		return EntityRPC{}, err
	}
	m.Args = clone(args)
	return m, nil
}

// ChatMessage is the payload of ChatMessage (type 13). A client sends it with
// an empty Sender; the server fills in the sender's admitted name and relays
// it to every other admitted client (§4).
type ChatMessage struct {
	Sender string // empty, or a valid name of ≤ 32 bytes
	Text   string // 1..256 bytes of UTF-8 without control characters
}

// AppendChatMessage appends the encoding of m (5..292 bytes) to dst.
func AppendChatMessage(dst []byte, m *ChatMessage) []byte {
	w := wire.AppendWriter(dst)
	w.Str(m.Sender)
	w.Str(m.Text)
	return w.Bytes()
}

// ParseChatMessage parses a ChatMessage as a client receives it: the sender is
// empty or a valid name.
func ParseChatMessage(p []byte) (ChatMessage, error) {
	return parseChat(p, false)
}

// ParseChatMessageFromClient parses a ChatMessage as the server receives it:
// additionally, a non-empty sender makes the payload malformed (§4).
func ParseChatMessageFromClient(p []byte) (ChatMessage, error) {
	return parseChat(p, true)
}

func parseChat(p []byte, fromClient bool) (ChatMessage, error) {
	sender, text, err := scanChat(p, fromClient)
	if err != nil {
		return ChatMessage{}, err
	}
	return ChatMessage{Sender: string(sender), Text: string(text)}, nil
}

func scanChat(p []byte, fromClient bool) (sender, text []byte, err error) {
	r := wire.NewReader(p)
	sender = r.StrBytes()
	switch {
	case r.HasError() || len(sender) == 0:
	case fromClient:
		r.Fail(errSenderSet)
	case !wire.ValidName(sender, wire.MaxNameLen):
		r.Fail(errBadName)
	}
	text = r.StrBytes()
	if !r.HasError() && !ValidChatText(text) {
		r.Fail(errBadText)
	}
	return sender, text, wire.Finish(&r)
}
