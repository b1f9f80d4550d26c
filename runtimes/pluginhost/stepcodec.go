package pluginhost

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// stepCodec is the gRPC codec of one plugin's Step calls. Requests are
// marshalled by the standard protobuf codec; answers (StepResponse) are
// decoded into storage the codec reuses from one answer to the next — the
// answer's bytes, the Action and Vec3 structs, the slice of them — so that
// an answer of hundreds of actions allocates next to nothing. Before, each
// answer was a few hundred objects and a copy of every payload: in
// BenchmarkLoad1000 nearly all the server's steady allocation, and so the
// collections that, on one core, land on a tick.
//
// The result aliases that storage: an answer is valid until the next one is
// decoded. The stepper guarantees it — one call in flight, and its answer
// is applied (finish) before the next call is sent — and nothing applied
// keeps a payload (sends copy it; field values are parsed out). Text, the
// one field kept (SetArea), is a string of its own. A message that uses a
// part this decoder does not know (only its sub-messages Metrics and
// Position have structure) still decodes exactly as protobuf would: the
// fields it skips are the unknown ones, which the host ignores.
type stepCodec struct {
	proto encoding.CodecV2

	buf     []byte
	ptrs    []*pluginv1.Action
	actions []pluginv1.Action // the first used of them hold this answer's actions
	vecs    []pluginv1.Vec3
	used    int
	usedVec int
}

func newStepCodec() *stepCodec {
	return &stepCodec{proto: encoding.GetCodecV2("proto")}
}

// Name is the content subtype: the plugin decodes the request with its
// standard protobuf codec.
func (c *stepCodec) Name() string { return "proto" }

func (c *stepCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c *stepCodec) Unmarshal(data mem.BufferSlice, v any) error {
	resp, ok := v.(*pluginv1.StepResponse)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	n := data.Len()
	if cap(c.buf) < n {
		c.buf = make([]byte, n, n+n/4)
	}
	c.buf = c.buf[:n]
	data.CopyTo(c.buf)
	return c.decode(c.buf, resp)
}

var errStepAnswer = errors.New("plugin: malformed Step answer")

func malformed(what string) error { return fmt.Errorf("%w: %s", errStepAnswer, what) }

// decode fills resp from b (a StepResponse's encoding). Actions and their
// byte fields alias b and the codec's storage.
func (c *stepCodec) decode(b []byte, resp *pluginv1.StepResponse) error {
	clear(c.ptrs[:cap(c.ptrs)]) // the previous answer's pointers
	resp.Actions = c.ptrs[:0]
	c.used, c.usedVec = 0, 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return malformed("bad tag")
		}
		b = b[l:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			if l = protowire.ConsumeFieldValue(num, typ, b); l < 0 {
				return malformed("bad field")
			}
			b = b[l:]
			continue
		}
		v, l := protowire.ConsumeBytes(b)
		if l < 0 {
			return malformed("truncated field")
		}
		b = b[l:]
		if num == 2 { // a metric: rare, decoded as protobuf does
			mv := new(pluginv1.MetricValue)
			if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(v, mv); err != nil {
				return err
			}
			resp.Metrics = append(resp.Metrics, mv)
			continue
		}
		a := c.action()
		if err := c.decodeAction(v, a); err != nil {
			return err
		}
		resp.Actions = append(resp.Actions, a)
	}
	c.ptrs = resp.Actions[:0]
	return nil
}

// action returns a zeroed Action from the codec's storage.
func (c *stepCodec) action() *pluginv1.Action {
	a := take(&c.actions, &c.used, 64)
	a.Reset()
	return a
}

// vec returns a zeroed Vec3 from the codec's storage.
func (c *stepCodec) vec() *pluginv1.Vec3 {
	v := take(&c.vecs, &c.usedVec, 16)
	v.Reset()
	return v
}

// take hands out the next element of *store (*used counts those handed
// out). A full store is replaced by a fresh, larger array: the elements
// already handed out for this answer stay where their pointers point, and
// the next answer uses the new one from its start.
func take[T any](store *[]T, used *int, least int) *T {
	if *used == len(*store) {
		*store = make([]T, max(2*len(*store), least))
		*used = 0
	}
	*used++
	return &(*store)[*used-1]
}

// decodeAction decodes one Action's encoding into a, as proto.Unmarshal
// would with unknown fields discarded: the last value of a scalar field
// wins, repeated Position messages merge, a field of the wrong wire type
// counts as unknown, text must be UTF-8.
func (c *stepCodec) decodeAction(b []byte, a *pluginv1.Action) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return malformed("bad action tag")
		}
		b = b[l:]
		switch {
		case typ == protowire.VarintType && (num >= 1 && num <= 3 || num >= 6 && num <= 11 || num >= 13 && num <= 14 || num == 16 || num == 17):
			x, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return malformed("truncated varint")
			}
			b = b[l:]
			switch num {
			case 1:
				a.Kind = pluginv1.ActionKind(int32(x))
			case 2:
				a.Client = uint32(x)
			case 3:
				a.Type = uint32(x)
			case 6:
				a.Score = int32(x)
			case 7:
				a.Kills = int32(x)
			case 8:
				a.Deaths = int32(x)
			case 9:
				a.Entity = uint32(x)
			case 10:
				a.EntityType = uint32(x)
			case 11:
				a.Party = uint32(x)
			case 13:
				a.Global = x != 0
			case 14:
				a.Teleport = x != 0
			case 16:
				a.Spectator = x != 0
			case 17:
				a.Room = uint32(x)
			}
		case typ == protowire.BytesType && (num == 4 || num == 5 || num == 12 || num == 15):
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return malformed("truncated bytes")
			}
			b = b[l:]
			switch num {
			case 4:
				a.Payload = v
			case 5:
				if !utf8.Valid(v) {
					return malformed("text is not UTF-8")
				}
				a.Text = string(v)
			case 12:
				if a.Position == nil {
					a.Position = c.vec()
				}
				if err := decodeVec3(v, a.Position); err != nil {
					return err
				}
			case 15:
				a.Fields = v
			}
		default:
			if l = protowire.ConsumeFieldValue(num, typ, b); l < 0 {
				return malformed("bad action field")
			}
			b = b[l:]
		}
	}
	return nil
}

// decodeVec3 merges a Vec3's encoding into v.
func decodeVec3(b []byte, v *pluginv1.Vec3) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return malformed("bad vector tag")
		}
		b = b[l:]
		if typ == protowire.Fixed32Type && num >= 1 && num <= 3 {
			x, l := protowire.ConsumeFixed32(b)
			if l < 0 {
				return malformed("truncated float")
			}
			b = b[l:]
			f := math.Float32frombits(x)
			switch num {
			case 1:
				v.X = f
			case 2:
				v.Y = f
			case 3:
				v.Z = f
			}
			continue
		}
		if l = protowire.ConsumeFieldValue(num, typ, b); l < 0 {
			return malformed("bad vector field")
		}
		b = b[l:]
	}
	return nil
}
