module github.com/sparkhost/sparkhost

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/yuin/gopher-lua v1.1.2
	golang.org/x/crypto v0.59.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
