package handshake

// Test hooks for the external test package (which imports seal, itself an
// importer of this package, so it cannot live in package handshake).
var (
	SessionSecret    = sessionSecret
	SmallOrderPoints = smallOrder
)

// SharedSecret exposes the all-zero check, which CheckClientHello makes
// unreachable through Accept.
var SharedSecret = sharedSecret
