package config

import "strconv"

// Error is every error Parse, Load (for the file's content) and Validate
// return: one problem with one key. Error() is a single line,
//
//	config.toml:7: server.port = 70000: must be 0..65535
//	server.heartbeat_interval = 1 (default): must be below server.client_timeout (1)
//
// with the "file:line: " prefix only when the value came from a file line.
type Error struct {
	File string // the config file as named to Load or Parse; "" for none
	Line int    // 1-based line in File; 0 when the value did not come from the file
	Key  string // dotted key, "server.port"; "" for a syntax error off any key
	Msg  string // the whole description after the position, key included
}

// Error returns "File:Line: Msg", or Msg alone when there is no line.
func (e *Error) Error() string {
	switch {
	case e.Line <= 0:
		return e.Msg
	case e.File == "":
		return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
	default:
		return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	}
}
