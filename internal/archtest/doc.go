// Package archtest holds the repository's layering test: it reads the
// import graph with `go list` and fails when a package imports across a
// boundary of ARCHITECTURE.md (revision 2). It has no code of its own.
package archtest
