package policy

import (
	"fmt"
	"os"
)

// EnvVar names the environment variable that may carry the bind text (§11).
const EnvVar = "SPARK_NETWORK_BIND_ADDRESS"

// Resolve picks the bind text from its three sources and parses it. Precedence,
// highest first, as the host's configuration rules ask: the command-line flag
// (it overrides file values), then the environment variable (it overrides the
// config file's bind address), then the config file, then DefaultBind. An empty
// string means "not given" for every source. The error says which source held the
// refused text, wrapping the *ParseError (errors.Is still finds the sentinel).
//
// Resolve is pure: the caller reads the flag, the environment and the file.
func Resolve(flag, env, file string) (Policy, error) {
	value, source := DefaultBind, "default"
	switch {
	case flag != "":
		value, source = flag, "command-line flag"
	case env != "":
		value, source = env, EnvVar
	case file != "":
		value, source = file, "config file"
	}
	p, err := Parse(value)
	if err != nil {
		return Policy{}, fmt.Errorf("bind address from %s: %w", source, err)
	}
	return p, nil
}

// FromEnv is Resolve for a caller without a config file: flagValue if it is
// non-empty, else $SPARK_NETWORK_BIND_ADDRESS if set and non-empty, else
// DefaultBind. A caller with a config file calls Resolve instead, so that the
// environment variable keeps its precedence over the file.
func FromEnv(flagValue string) (Policy, error) {
	return Resolve(flagValue, os.Getenv(EnvVar), "")
}
