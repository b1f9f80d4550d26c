// Package mmoproto defines the mmo module's messages: UserDefined types
// (protocol v3 §10) from 1100, their receive schemas, their encodings with
// netstack/wire's Writer and Reader, and the error codes a client is answered
// with. docs/mmo.md is the normative description; this package implements it.
//
// Conventions for every message:
//   - Every client request starts with a u32 request id. The server answers
//     each request with exactly one message carrying the same id: its specific
//     result (RegisterResult, LoginChallenge, LoginResult, CharacterList,
//     Entered, WhereResult) on success, or Result, whose code is OK for
//     requests without a specific result and the error otherwise.
//   - Every type travels on ReliableOrdered: requests must not overtake one
//     another (a Stop after a MoveIntent), and the replication messages
//     (WorldUpdate; Appear, Positions, Disappear from older servers) are
//     deltas that must all arrive in order.
//   - AppendXxx encodes as given; it does not check limits (parse what you
//     send in tests). ParseXxx parses the whole payload (trailing bytes are
//     malformed), checks every str is UTF-8 without NUL within its bound,
//     every position and direction float is finite (except PositionUpload,
//     which is refused whatever it says), and list counts against the bytes
//     that remain before allocating. Errors match ErrMalformed. Parsed
//     messages never alias the input. Encodings are canonical: a parsed
//     message re-encodes to the same bytes.
//   - Names travel as given; whether a name is acceptable (NameInvalid) is
//     the server's decision, not the parser's, so that a bad name is answered
//     rather than dropped.
package mmoproto
