package gamemsg

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sparkhost/sparkhost/netstack/wire"
)

// spawnBytes builds an EntitySpawn by hand with an explicit field_count.
func spawnBytes(count uint8, mask uint64, typeID uint16, data []byte) []byte {
	return enc(uint32(42), count, mask, typeID, uint32(7), data)
}

func TestParseEntitySpawn(t *testing.T) {
	runParseCases(t, ParseEntitySpawn, AppendEntitySpawn, []parseCase{
		{"no fields (19 bytes)", spawnBytes(0, 0, 3, nil), nil},
		{"all fields", spawnBytes(5, 0x1F, 3, appendValues(nil, testSpawnValues)), nil},
		{"data is not judged without a schema", spawnBytes(1, 1<<63, 3, []byte{9, 9, 9}), nil},
		{"field_count above popcount", spawnBytes(2, 0x1, 3, nil), errFieldCount},
		{"field_count below popcount", spawnBytes(1, 0x3, 3, nil), errFieldCount},
		{"18 bytes", spawnBytes(0, 0, 3, nil)[:18], wire.ErrOverrun},
	})
}

func TestParseEntitySpawnFields(t *testing.T) {
	all := appendValues(nil, testSpawnValues)
	some := appendValues(nil, []FieldValue{testSpawnValues[1], testSpawnValues[4]})
	tests := []struct {
		name string
		in   []byte
		want []FieldValue
		err  error
	}{
		{"all fields", spawnBytes(5, 0x1F, 3, all), testSpawnValues, nil},
		{"fields 1 and 4", spawnBytes(2, 0x12, 3, some), []FieldValue{testSpawnValues[1], testSpawnValues[4]}, nil},
		{"no fields", spawnBytes(0, 0, 3, nil), nil, nil},
		{"other type", spawnBytes(5, 0x1F, 4, all), nil, errTypeMismatch},
		{"bit beyond the schema", spawnBytes(6, 0x3F, 3, append(all, 0)), nil, errBeyondSchema},
		{"data too short", spawnBytes(5, 0x1F, 3, all[:len(all)-1]), nil, wire.ErrOverrun},
		{"data too long", spawnBytes(5, 0x1F, 3, append(all, 0)), nil, wire.ErrTrailing},
		{"bool byte 2", spawnBytes(1, 0x1, 3, []byte{2}), nil, wire.ErrBadBool},
		{"NaN float", spawnBytes(1, 0x8, 3, enc(nan)), nil, wire.ErrNonFinite},
		{"Inf in vec3", spawnBytes(1, 0x10, 3, enc(wire.Vec3{X: 0, Y: 0, Z: ninf})), nil, wire.ErrNonFinite},
		{"field_count mismatch", spawnBytes(4, 0x1F, 3, all), nil, errFieldCount},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, vals, err := ParseEntitySpawnFields(tc.in, &testEntityType)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !errors.Is(err, wire.ErrMalformedPayload) {
					t.Fatalf("error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEntitySpawnFields: %v", err)
			}
			if !reflect.DeepEqual(vals, tc.want) {
				t.Fatalf("values:\n got %+v\nwant %+v", vals, tc.want)
			}
			if out := AppendEntitySpawn(nil, &m); string(out) != string(tc.in) {
				t.Fatalf("re-encoding differs")
			}
			if data := appendValues(nil, vals); string(data) != string(m.Data) {
				t.Fatalf("values re-encode to % x, data was % x", data, m.Data)
			}
		})
	}
}

func TestParseEntityStateUpdate(t *testing.T) {
	runParseCases(t, ParseEntityStateUpdate, AppendEntityStateUpdate, []parseCase{
		{"no data (12 bytes)", enc(uint32(42), uint64(0)), nil},
		{"data", enc(uint32(42), uint64(0x2), int32(9)), nil},
		{"11 bytes", enc(uint32(42), uint32(0), uint16(0), uint8(0)), wire.ErrOverrun},
	})
}

func TestParseEntityStateUpdateFields(t *testing.T) {
	score := FieldValue{Index: 1, Kind: KindInt32, Int: 9}
	pos := FieldValue{Index: 4, Kind: KindVec3, Vec: wire.Vec3{X: 1, Y: 1, Z: 1}}
	both := appendValues(nil, []FieldValue{score, pos})
	tests := []struct {
		name    string
		dirty   uint64
		visible uint64
		data    []byte
		want    []FieldValue
		err     error
	}{
		{"dirty and visible", 0x12, 0x1F, both, []FieldValue{score, pos}, nil},
		{"invisible dirty field carries no data", 0x16, 0x1B, both, []FieldValue{score, pos}, nil},
		{"nothing dirty", 0, 0x1F, nil, nil, nil},
		{"dirty bit beyond schema", 0x32, 0x1F, both, nil, errBeyondSchema},
		{"dirty bit beyond schema and not visible", 0x40000012, 0x1F, both, nil, errBeyondSchema},
		{"data short", 0x12, 0x1F, both[:10], nil, wire.ErrOverrun},
		{"data for an invisible field", 0x12, 0x02, both, nil, wire.ErrTrailing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := AppendEntityStateUpdate(nil, &EntityStateUpdate{EntityID: 42, DirtyMask: tc.dirty, Data: tc.data})
			m, vals, err := ParseEntityStateUpdateFields(p, &testEntityType, tc.visible)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEntityStateUpdateFields: %v", err)
			}
			if !reflect.DeepEqual(vals, tc.want) {
				t.Fatalf("values:\n got %+v\nwant %+v", vals, tc.want)
			}
			if m.DirtyMask != tc.dirty || m.EntityID != 42 {
				t.Fatalf("header fields lost: %+v", m)
			}
		})
	}
}

func TestDecodeFieldsSchemaEdges(t *testing.T) {
	wide := EntityTypeSchema{TypeID: 1, Name: "wide", Fields: make([]FieldSchema, 64)}
	vals, err := DecodeFields(&wide, 1<<63, 1<<63, []byte{1})
	if err != nil || len(vals) != 1 || vals[0].Index != 63 || !vals[0].Bool {
		t.Fatalf("64-field schema, bit 63: %+v, %v", vals, err)
	}
	bad := EntityTypeSchema{Fields: []FieldSchema{{Name: "x", Kind: 9}}}
	if _, err := DecodeFields(&bad, 1, 1, []byte{0}); !errors.Is(err, wire.ErrMalformedPayload) {
		t.Fatalf("undefined kind in schema: %v", err)
	}
	empty := EntityTypeSchema{}
	if _, err := DecodeFields(&empty, 1, 1, nil); !errors.Is(err, errBeyondSchema) {
		t.Fatalf("field bit on an empty schema: %v", err)
	}
	for k := KindBool; k <= KindVec3; k++ {
		if n := len(AppendFieldValue(nil, &FieldValue{Kind: k})); n != k.Width() {
			t.Errorf("%v encodes to %d bytes, Width says %d", k, n, k.Width())
		}
	}
}
