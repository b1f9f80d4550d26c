package pluginwire

import (
	"math"
	"reflect"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

func TestFieldValuesRoundTrip(t *testing.T) {
	vals := []gamemsg.FieldValue{
		{Index: 0, Kind: gamemsg.KindVec3, Vec: wire.Vec3{X: 1, Y: -2, Z: 3.5}},
		{Index: 63, Kind: gamemsg.KindBool, Bool: true},
		{Index: 5, Kind: gamemsg.KindInt32, Int: -7},
		{Index: 6, Kind: gamemsg.KindUint32, Uint: 1 << 31},
		{Index: 7, Kind: gamemsg.KindFloat, Float: 0.25},
	}
	b := AppendFieldValues(nil, vals)
	if len(b) != 5*2+12+1+4+4+4 {
		t.Fatalf("%d bytes", len(b))
	}
	got, err := ParseFieldValues(b)
	if err != nil || !reflect.DeepEqual(got, vals) {
		t.Fatalf("%+v %v", got, err)
	}
	for name, bad := range map[string][]byte{
		"truncated":  b[:len(b)-1],
		"index 64":   {64, 0, 1},
		"kind 5":     {0, 5, 1},
		"bool 2":     {0, 0, 2},
		"NaN float":  AppendFieldValues(nil, []gamemsg.FieldValue{{Kind: gamemsg.KindFloat, Float: float32(math.NaN())}}),
		"Inf vector": AppendFieldValues(nil, []gamemsg.FieldValue{{Kind: gamemsg.KindVec3, Vec: wire.Vec3{Y: float32(math.Inf(1))}}}),
		"65 values":  AppendFieldValues(nil, make([]gamemsg.FieldValue, 65)),
	} {
		if _, err := ParseFieldValues(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseFieldValues(f *testing.F) {
	f.Add(AppendFieldValues(nil, []gamemsg.FieldValue{{Index: 1, Kind: gamemsg.KindVec3}, {Index: 2, Kind: gamemsg.KindBool, Bool: true}}))
	f.Add([]byte{0, 1, 1, 2, 3, 4})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := ParseFieldValues(b)
		if err != nil {
			return
		}
		if again := AppendFieldValues(nil, vals); string(again) != string(b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}
