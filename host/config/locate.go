package config

import "github.com/sparkhost/sparkhost/internal/tomlkeys"

// keyLines are the lines of the config file's keys (tomlkeys.Lines).
type keyLines = tomlkeys.Lines

// locateKeys finds the line of every key of the config file's text.
func locateKeys(text []byte) keyLines { return tomlkeys.Locate(text) }
