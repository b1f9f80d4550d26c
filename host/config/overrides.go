package config

import (
	"maps"
	"slices"

	"github.com/sparkhost/sparkhost/netstack/policy"
)

// Overrides are the command-line flags that override config values. A nil
// pointer (or an empty Modules) means the flag was not given; a given flag
// always wins, even with a value Validate will refuse.
type Overrides struct {
	Port       *int     // --port: server.port
	Bind       *string  // --bind: network.bind_address; "" counts as not given
	DataDir    *string  // --data-dir: server.data_dir
	MaxClients *int     // --max-clients: server.max_clients
	Modules    []string // --module, repeatable: replaces modules.load
	Internet   bool     // --internet: network.exposure = "internet"
	Rooms      bool     // --rooms: rooms.enabled = true
	Modes      []string // --mode, repeatable: replaces rooms.modes
}

// Apply lays the overrides over c. Precedence, highest first:
//
//   - network.bind_address: the --bind flag, then $SPARK_NETWORK_BIND_ADDRESS
//     (read through env; empty means unset, as for netstack/policy.Resolve),
//     then the file, then the default.
//   - server.port, server.data_dir, server.max_clients, network.exposure
//     (--internet): the flag, then the file, then the default. --internet
//     also turns network.allow_v3 off unless the file sets it (internet
//     mode is v4 only; Validate refuses allow_v3 = true written with it).
//   - modules.load: any --module REPLACES the file's whole list rather than
//     adding to it, so that the command line can also run fewer modules than
//     the file names, and what runs is exactly what the command line says.
//
// env is os.Getenv in production; nil means an empty environment. Apply does
// not validate: call Validate afterwards, whose messages then name the flag
// or variable a refused value came from ("server.port = 70000 (--port): ...").
func (c *Config) Apply(o Overrides, env func(string) string) {
	if o.Port != nil {
		c.Server.Port = *o.Port
		c.setBy("server.port", "--port")
	}
	if o.DataDir != nil {
		c.Server.DataDir = *o.DataDir
		c.setBy("server.data_dir", "--data-dir")
	}
	if o.MaxClients != nil {
		c.Server.MaxClients = *o.MaxClients
		c.setBy("server.max_clients", "--max-clients")
	}
	if len(o.Modules) > 0 {
		c.Modules.Load = slices.Clone(o.Modules)
		c.setBy("modules.load", "--module")
	}
	if o.Internet {
		c.Network.Exposure = ExposureInternet
		c.setBy("network.exposure", "--internet")
		if !c.givenExplicitly("network.allow_v3") {
			// Internet mode is v4 only; an allow_v3 the operator wrote
			// stays, for Validate to refuse with its line.
			c.Network.AllowV3 = false
		}
	}
	if o.Rooms {
		c.Rooms.Enabled = true
		c.setBy("rooms.enabled", "--rooms")
	}
	if len(o.Modes) > 0 {
		c.Rooms.Modes = slices.Clone(o.Modes)
		c.setBy("rooms.modes", "--mode")
	}
	var fromEnv string
	if env != nil {
		fromEnv = env(policy.EnvVar)
	}
	switch {
	case o.Bind != nil && *o.Bind != "":
		c.Network.BindAddress = *o.Bind
		c.setBy("network.bind_address", "--bind")
	case fromEnv != "":
		c.Network.BindAddress = fromEnv
		c.setBy("network.bind_address", policy.EnvVar)
	}
}

// origin records where a Config's values came from, for Validate's messages.
// It is never modified once shared: copies of a Config share it, so setBy
// replaces it with a modified copy.
type origin struct {
	file     string
	loaded   bool              // values not in fromFile or override are defaults
	fromFile map[string]int    // key → line of keys the file set (0: not located)
	override map[string]string // key → flag or variable that set it
}

// setBy records that label ("--port") set key.
func (c *Config) setBy(key, label string) {
	next := &origin{}
	if c.origin != nil {
		*next = *c.origin
	}
	next.override = maps.Clone(next.override)
	if next.override == nil {
		next.override = map[string]string{}
	}
	next.override[key] = label
	c.origin = next
}

// source returns the file line of key's value, or a label saying where else
// it came from ("--port", "default"), or neither when that is unknown (a
// Config built in code).
func (o *origin) source(key string) (line int, label string) {
	if o == nil {
		return 0, ""
	}
	if l, ok := o.override[key]; ok {
		return 0, l
	}
	if line, ok := o.fromFile[key]; ok {
		return line, ""
	}
	if o.loaded {
		return 0, "default"
	}
	return 0, ""
}

func (o *origin) fileName() string {
	if o == nil {
		return ""
	}
	return o.file
}
