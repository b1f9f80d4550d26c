module github.com/sparkhost/sparkhost/bench

go 1.26.8

require (
	github.com/quic-go/quic-go v0.65.0
	github.com/sparkhost/sparkhost v0.0.0
	golang.org/x/sys v0.50.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/net v0.62.0 // indirect
)

replace github.com/sparkhost/sparkhost => ../
