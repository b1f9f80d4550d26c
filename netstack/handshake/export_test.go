package handshake

// Test hooks for the external test package (which imports seal, itself an
// importer of this package, so it cannot live in package handshake).
var (
	SessionSecret    = func(ss, th [32]byte) [32]byte { return sessionSecret(ProtocolVersion, ss, th) }
	SessionSecretV4  = func(ss, th [32]byte) [32]byte { return sessionSecret(ProtocolVersion4, ss, th) }
	SmallOrderPoints = smallOrder
)

// SharedSecret exposes the all-zero check, which CheckClientHello makes
// unreachable through Accept.
var SharedSecret = sharedSecret
