// Package maps holds the map files shipped with sparkhost, embedded in the
// binary so that a server finds them from any working directory. The files
// are data (TOML, one map each, named NAME.toml); their format and the
// loader that validates them are in modules/deathmatch/maps.
//
// This package only embeds: it must never parse, so that it stays free of
// dependencies and can sit at the repository root next to the files.
package maps

import "embed"

// Files holds every *.toml of this directory, at the root of the FS.
//
//go:embed *.toml
var Files embed.FS
