package pluginhost

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// stepSamples are StepResponses that use every field of Action, a
// position, metrics, and none.
func stepSamples() []*pluginv1.StepResponse {
	r := rand.New(rand.NewPCG(1, 2))
	full := &pluginv1.StepResponse{Metrics: []*pluginv1.MetricValue{{Index: 3, Value: 2.5}, {Index: 0, Value: -1}}}
	for i := range 40 {
		a := &pluginv1.Action{
			Kind: pluginv1.ActionKind(r.IntN(30)), Client: r.Uint32(), Type: uint32(1000 + i), Payload: []byte(fmt.Sprint("payload ", i)),
			Score: -int32(i), Kills: int32(i), Deaths: r.Int32(), Entity: r.Uint32(), EntityType: uint32(i % 3), Party: 7,
			Global: i%2 == 0, Teleport: i%3 == 0, Fields: []byte{byte(i), 1, 2}, Spectator: i%5 == 0, Room: uint32(i % 4),
		}
		if i%4 == 0 {
			a.Position = &pluginv1.Vec3{X: float32(i), Y: -1.5, Z: 1e9}
		}
		if i%7 == 0 {
			a.Text = fmt.Sprint("text ✓ ", i)
		}
		full.Actions = append(full.Actions, a)
	}
	sends := &pluginv1.StepResponse{}
	for i := range 200 {
		sends.Actions = append(sends.Actions, &pluginv1.Action{Kind: pluginv1.ActionKind_ACTION_SEND, Client: uint32(i + 1), Type: 1131, Payload: make([]byte, 300+i)})
	}
	return []*pluginv1.StepResponse{full, {}, sends, {Actions: []*pluginv1.Action{{}}}}
}

func decodeStep(t testing.TB, c *stepCodec, b []byte) (*pluginv1.StepResponse, error) {
	t.Helper()
	resp := new(pluginv1.StepResponse)
	err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, resp)
	return resp, err
}

// TestStepCodecDecodesAsProtobuf: every sample decodes to what was
// encoded, one after another through the same codec, so that no field of a
// reused Action survives into an answer that does not set it.
func TestStepCodecDecodesAsProtobuf(t *testing.T) {
	c := newStepCodec()
	samples := stepSamples()
	for round := range 3 {
		for i, want := range samples {
			b, err := proto.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeStep(t, c, b)
			if err != nil {
				t.Fatalf("round %d sample %d: %v", round, i, err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("round %d sample %d: decoded\n%v\nwant\n%v", round, i, got, want)
			}
		}
	}
}

// TestStepCodecReusesItsStorage: once warm, an answer of 200 sends decodes
// without allocating (the response itself is the caller's).
func TestStepCodecReusesItsStorage(t *testing.T) {
	c := newStepCodec()
	b, _ := proto.Marshal(stepSamples()[2])
	resp := new(pluginv1.StepResponse)
	data := mem.BufferSlice{mem.SliceBuffer(b)}
	if err := c.Unmarshal(data, resp); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() {
		*resp = pluginv1.StepResponse{}
		if err := c.Unmarshal(data, resp); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("decoding an answer of 200 sends allocated %.0f times", n)
	}
	if len(resp.Actions) != 200 || resp.Actions[199].Client != 200 || len(resp.Actions[199].Payload) != 499 {
		t.Fatalf("decoded %d actions", len(resp.Actions))
	}
}

// FuzzStepCodec: for any bytes the codec agrees with protobuf (unknown
// fields discarded): both refuse, or both decode the same message. Seeds:
// the samples, and testdata/fuzz/FuzzStepCodec.
func FuzzStepCodec(f *testing.F) {
	for _, s := range stepSamples() {
		b, _ := proto.Marshal(s)
		f.Add(b)
	}
	// An unknown field, a Position sent twice (merged), a wrong wire type.
	f.Add(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 5))
	f.Add([]byte{0x0a, 0x0c, 0x62, 0x05, 0x0d, 0, 0, 0x80, 0x3f, 0x62, 0x05, 0x15, 0, 0, 0, 0x40})
	f.Add([]byte{0x0a, 0x02, 0x10, 0x01, 0x0a, 0x02, 0x22, 0x00})
	c := newStepCodec()
	f.Fuzz(func(t *testing.T, b []byte) {
		want := new(pluginv1.StepResponse)
		werr := proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, want)
		got, err := decodeStep(t, c, b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("codec error %v, protobuf error %v", err, werr)
		}
		if err == nil && !proto.Equal(got, want) {
			t.Fatalf("codec decoded\n%v\nprotobuf\n%v", got, want)
		}
	})
}
