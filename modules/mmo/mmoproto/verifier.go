package mmoproto

import "github.com/sparkhost/sparkhost/netstack/wire"

// VerifierUpgrade (1129, S→C, unsolicited) follows a LoginResult when the
// account's verifier uses another iteration count than the server's
// current one (docs/mmo.md §7.5): the client, which has just proved the
// password, computes a verifier with a fresh salt and Iterations and sends
// it in SetVerifier. A client that does not is still logged in; it is
// asked again at its next login.
type VerifierUpgrade struct {
	Iterations uint32
}

// Type returns TypeVerifierUpgrade.
func (*VerifierUpgrade) Type() wire.MessageType { return TypeVerifierUpgrade }

// Append appends m's encoding to dst.
func (m *VerifierUpgrade) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.Iterations)
	return done(dst, &w)
}

func (m *VerifierUpgrade) decode(r *wire.Reader) { m.Iterations = r.U32() }

// SetVerifier (1130, C→S) answers a VerifierUpgrade with the account's new
// verifier: a fresh salt and exactly the iteration count asked for.
// Answered by Result (OK; OutOfOrder when no upgrade was asked for this
// login or the count differs; NotLoggedIn; BadRequest; Internal).
type SetVerifier struct {
	RequestID  uint32
	Salt       [SaltLen]byte
	Iterations uint32
	StoredKey  [KeyLen]byte
	ServerKey  [KeyLen]byte
}

// Type returns TypeSetVerifier.
func (*SetVerifier) Type() wire.MessageType { return TypeSetVerifier }

// Append appends m's encoding to dst.
func (m *SetVerifier) Append(dst []byte) []byte {
	w := newWriter(dst)
	w.U32(m.RequestID)
	w.Raw(m.Salt[:])
	w.U32(m.Iterations)
	w.Raw(m.StoredKey[:])
	w.Raw(m.ServerKey[:])
	return done(dst, &w)
}

func (m *SetVerifier) decode(r *wire.Reader) {
	m.RequestID = r.U32()
	copy(m.Salt[:], r.Bytes(SaltLen))
	m.Iterations = r.U32()
	copy(m.StoredKey[:], r.Bytes(KeyLen))
	copy(m.ServerKey[:], r.Bytes(KeyLen))
}
