// Package pluginwire is what both ends of a Go plugin share: the go-plugin
// handshake, the plugin set, and conversions between the protobuf messages
// of proto/pluginv1 and the wire types. Plugin authors never import it; they
// use package plugin, and the server uses runtimes/pluginhost.
package pluginwire

import (
	"context"
	"fmt"
	"strconv"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sparkhost/sparkhost/netstack/wire"
	"github.com/sparkhost/sparkhost/proto/pluginv1"
	"github.com/sparkhost/sparkhost/sim/gamemsg"
)

// Handshake constants. The cookie is not a secret: it only tells a plugin
// binary that a sparkhost server started it (and tells a person who runs it
// by hand what it is).
const (
	CookieKey   = "SPARKHOST_PLUGIN"
	CookieValue = "sparkhost-module-7c1e"
	// PluginName is the one plugin in the set.
	PluginName = "module"
	// DescribeEnv, set to 1 beside the cookie, makes a plugin print its
	// manifest as JSON on stdout and exit without serving.
	DescribeEnv = "SPARKHOST_PLUGIN_DESCRIBE"
)

// protocolVersion is the plugin protocol this build speaks (proto/pluginv1
// is protocol 1). It is a string so that tests can build a plugin that
// speaks another version with
// -ldflags "-X github.com/sparkhost/sparkhost/internal/pluginwire.protocolVersion=2".
var protocolVersion = "1"

// ProtocolVersion returns the plugin protocol version of this build.
func ProtocolVersion() int {
	v, err := strconv.Atoi(protocolVersion)
	if err != nil || v <= 0 {
		panic(fmt.Sprintf("pluginwire: bad protocolVersion %q", protocolVersion))
	}
	return v
}

// Handshake returns the go-plugin handshake of this build.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  uint(ProtocolVersion()),
		MagicCookieKey:   CookieKey,
		MagicCookieValue: CookieValue,
	}
}

// GRPCPlugin is the go-plugin plugin of a module: the plugin side sets
// Impl; the host side dispenses a pluginv1.ModuleClient.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl pluginv1.ModuleServer
}

// GRPCServer implements goplugin.GRPCPlugin.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterModuleServer(s, p.Impl)
	return nil
}

// GRPCClient implements goplugin.GRPCPlugin.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginv1.NewModuleClient(c), nil
}

// PluginSet is the set a server or a plugin of this build offers.
func PluginSet(server pluginv1.ModuleServer) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{ProtocolVersion(): {PluginName: &GRPCPlugin{Impl: server}}}
}

// SchemaToPB converts a schema for the wire.
func SchemaToPB(s wire.Schema) *pluginv1.Schema {
	return &pluginv1.Schema{
		Id: uint32(s.ID), Name: s.Name, Direction: uint32(s.Direction), Channel: uint32(s.Channel),
		MinLen: s.MinLen, MaxLen: s.MaxLen, StringFieldOffset: s.StringFieldOffset, RequiresAdmitted: s.RequiresAdmitted,
		Fields: fieldsToPB(s.Fields),
	}
}

func fieldsToPB(fs []wire.Field) []*pluginv1.Field {
	if fs == nil {
		return nil
	}
	out := make([]*pluginv1.Field, len(fs))
	for i, f := range fs {
		out[i] = &pluginv1.Field{Name: f.Name, Kind: uint32(f.Kind), Max: uint32(f.Max), Elem: uint32(f.Elem), ElemMax: uint32(f.ElemMax)}
	}
	return out
}

// fieldsFromPB converts a typed schema's fields; nil for an untyped one.
func fieldsFromPB(name string, ps []*pluginv1.Field) ([]wire.Field, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	if len(ps) > wire.MaxFields {
		return nil, fmt.Errorf("schema %q: %d fields; a message may declare at most %d", name, len(ps), wire.MaxFields)
	}
	out := make([]wire.Field, len(ps))
	for i, p := range ps {
		if p.GetKind() > 0xFF || p.GetElem() > 0xFF || p.GetMax() > 0xFFFF || p.GetElemMax() > 0xFFFF {
			return nil, fmt.Errorf("schema %q: field %q: kind, elem, max or elem_max out of range", name, p.GetName())
		}
		out[i] = wire.Field{Name: p.GetName(), Kind: wire.Kind(p.GetKind()), Max: uint16(p.GetMax()),
			Elem: wire.Kind(p.GetElem()), ElemMax: uint16(p.GetElemMax())}
	}
	return out, nil
}

// SchemaFromPB converts a schema from the wire. It checks only what fits in
// the types; the registry checks the rest when the module registers it.
func SchemaFromPB(p *pluginv1.Schema) (wire.Schema, error) {
	if p.GetId() > 0xFFFF || p.GetDirection() > 0xFF || p.GetChannel() > 0xFF {
		return wire.Schema{}, fmt.Errorf("schema %q: id %d, direction %d or channel %d out of range", p.GetName(), p.GetId(), p.GetDirection(), p.GetChannel())
	}
	fields, err := fieldsFromPB(p.GetName(), p.GetFields())
	if err != nil {
		return wire.Schema{}, err
	}
	return wire.Schema{
		ID: wire.MessageType(p.GetId()), Name: p.GetName(), Direction: wire.Direction(p.GetDirection()),
		Channel: wire.Channel(p.GetChannel()), MinLen: p.GetMinLen(), MaxLen: p.GetMaxLen(),
		StringFieldOffset: p.GetStringFieldOffset(), RequiresAdmitted: p.GetRequiresAdmitted(),
		Fields: fields,
	}, nil
}

// Description is what a plugin prints, as JSON on stdout, when started with
// DescribeEnv=1: its protocol version and manifest, without serving.
type Description struct {
	Protocol int           `json:"protocol"`
	Name     string        `json:"name"`
	Version  string        `json:"version"`
	Messages []wire.Schema `json:"messages"`
	Commands []Command     `json:"commands"`
	// EntityTypes and Inputs: what the module declares of entity
	// replication and whether it subscribes to ClientInput.
	EntityTypes []EntityType `json:"entity_types,omitempty"`
	Inputs      bool         `json:"inputs,omitempty"`
}

// EntityType is an entity type in a Description.
type EntityType struct {
	ID     uint16                `json:"id"`
	Name   string                `json:"name"`
	Fields []gamemsg.FieldSchema `json:"fields"`
}

// Command is a console command in a Description.
type Command struct {
	Name  string `json:"name"`
	Usage string `json:"usage"`
	Help  string `json:"help"`
}

// Vec3ToPB converts a vector for the wire.
func Vec3ToPB(v wire.Vec3) *pluginv1.Vec3 { return &pluginv1.Vec3{X: v.X, Y: v.Y, Z: v.Z} }

// Vec3FromPB converts a vector from the wire (absent: zero).
func Vec3FromPB(p *pluginv1.Vec3) wire.Vec3 {
	return wire.Vec3{X: p.GetX(), Y: p.GetY(), Z: p.GetZ()}
}
