package store

// The SQLite driver: modernc.org/sqlite, SQLite translated to Go (no cgo).
import _ "modernc.org/sqlite" // registers the "sqlite" driver
