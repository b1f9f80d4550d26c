package mmoproto

import "strconv"

// Code is the u16 error code of a Result (docs/mmo.md). Codes are stable:
// new ones are only ever appended.
type Code uint16

// Result codes.
const (
	OK                    Code = 0  // the request succeeded
	BadRequest            Code = 1  // malformed request or an argument out of range
	Internal              Code = 2  // a server fault (e.g. the database); try again later
	NameInvalid           Code = 3  // account or character name breaks its rule
	AccountExists         Code = 4  // registration: the name is taken (any case)
	IterationsTooLow      Code = 5  // registration: the verifier's iteration count is below the server's minimum
	AuthFailed            Code = 6  // login failed: no detail, whether or not the account exists
	Throttled             Code = 7  // too many failed logins: retry after RetryAfterMS
	NotLoggedIn           Code = 8  // the request needs a logged-in session
	AlreadyLoggedIn       Code = 9  // register or login on a session that is logged in
	OutOfOrder            Code = 10 // a login step without the one before it
	NoSuchCharacter       Code = 11 // no character of that name
	NotYourCharacter      Code = 12 // the character belongs to another account
	CharacterExists       Code = 13 // creation: the name is taken (any case)
	TooManyCharacters     Code = 14 // creation: the account has the maximum already
	AlreadyInWorld        Code = 15 // enter: the session already plays a character
	NotInWorld            Code = 16 // the request needs a character in the world
	TargetNotInWorld      Code = 17 // greet: no character of that name is in the world
	GreetSelf             Code = 18 // greet: the target is the greeter
	TooFar                Code = 19 // greet: the target is beyond the greeting radius
	PositionUploadRefused Code = 20 // PositionUpload: positions are server-timed; always refused
	TicketInvalid         Code = 21 // gateway ticket: malformed, or its proof is not the client key's over this session
	TicketSignature       Code = 22 // gateway ticket: not signed by this world's key
	TicketExpired         Code = 23 // gateway ticket: past its expiry (the database's clock), or expiring implausibly late
	TicketWrongServer     Code = 24 // gateway ticket: made for another server's identity
	TicketReplayed        Code = 25 // gateway ticket: already used (single use, recorded in the database)
	CharacterElsewhere    Code = 26 // gateway ticket: the character is in the world on another server
	TicketsNotAccepted    Code = 27 // gateway ticket: this server is not an area server of a world
	AccountBanned         Code = 28 // login: the password is right but the account is banned; detail is the reason
	RegistrationLimited   Code = 29 // registration: too many from this address; retry after RetryAfterMS
	ProtocolUnsupported   Code = 30 // login: the client's mmo protocol is not one this server serves; detail says which it serves
)

var codeNames = [...]string{
	OK: "OK", BadRequest: "BadRequest", Internal: "Internal", NameInvalid: "NameInvalid",
	AccountExists: "AccountExists", IterationsTooLow: "IterationsTooLow", AuthFailed: "AuthFailed",
	Throttled: "Throttled", NotLoggedIn: "NotLoggedIn", AlreadyLoggedIn: "AlreadyLoggedIn",
	OutOfOrder: "OutOfOrder", NoSuchCharacter: "NoSuchCharacter", NotYourCharacter: "NotYourCharacter",
	CharacterExists: "CharacterExists", TooManyCharacters: "TooManyCharacters",
	AlreadyInWorld: "AlreadyInWorld", NotInWorld: "NotInWorld", TargetNotInWorld: "TargetNotInWorld",
	GreetSelf: "GreetSelf", TooFar: "TooFar", PositionUploadRefused: "PositionUploadRefused",
	TicketInvalid: "TicketInvalid", TicketSignature: "TicketSignature", TicketExpired: "TicketExpired",
	TicketWrongServer: "TicketWrongServer", TicketReplayed: "TicketReplayed", CharacterElsewhere: "CharacterElsewhere",
	TicketsNotAccepted: "TicketsNotAccepted", AccountBanned: "AccountBanned", RegistrationLimited: "RegistrationLimited",
	ProtocolUnsupported: "ProtocolUnsupported",
}

// String returns the code's name, or "Code(n)" for a code this version does
// not know (a newer server's): a client shows it rather than failing.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

var codeText = [...]string{
	OK:                    "ok",
	BadRequest:            "the request is malformed or an argument is out of range",
	Internal:              "the server failed; try again later",
	NameInvalid:           "invalid name: accounts are 3-24 of a-z 0-9 _, characters 3-16 letters",
	AccountExists:         "that account name is taken",
	IterationsTooLow:      "the password verifier's iteration count is below the server's minimum",
	AuthFailed:            "wrong account name or password",
	Throttled:             "too many failed logins; wait and try again",
	NotLoggedIn:           "log in first",
	AlreadyLoggedIn:       "this session is already logged in; log out first",
	OutOfOrder:            "login steps out of order; start the login again",
	NoSuchCharacter:       "no character of that name",
	NotYourCharacter:      "that character belongs to another account",
	CharacterExists:       "that character name is taken",
	TooManyCharacters:     "the account has the maximum number of characters",
	AlreadyInWorld:        "already in the world; leave first",
	NotInWorld:            "enter the world with a character first",
	TargetNotInWorld:      "no character of that name is in the world",
	GreetSelf:             "a character cannot greet itself",
	TooFar:                "the target is too far away to greet",
	PositionUploadRefused: "positions are server-timed: send MoveIntent or Stop",
	TicketInvalid:         "the gateway ticket is malformed or was not proven by this client; log in with your password",
	TicketSignature:       "the gateway ticket is not signed by this world's key; log in with your password",
	TicketExpired:         "the gateway ticket has expired; log in with your password",
	TicketWrongServer:     "the gateway ticket is for another server; log in with your password",
	TicketReplayed:        "the gateway ticket was used already; log in with your password",
	CharacterElsewhere:    "the character is in the world on another server",
	TicketsNotAccepted:    "this server takes no gateway tickets; log in with your password",
	AccountBanned:         "this account is banned",
	RegistrationLimited:   "too many registrations from your address; wait and try again",
	ProtocolUnsupported:   "this server does not serve your client's mmo protocol; update the client",
}

// Text returns a one-line English explanation of c for users.
func (c Code) Text() string {
	if int(c) < len(codeText) {
		return codeText[c]
	}
	return "error " + c.String()
}

// LoggedOutReason is the reason byte of LoggedOut.
type LoggedOutReason uint8

// Reasons a server ends a session's login on its own.
const (
	LoggedOutUnknown         LoggedOutReason = 0
	LoggedOutElsewhere       LoggedOutReason = 1 // the account logged in on another connection
	LoggedOutModuleRestarted LoggedOutReason = 2 // the module restarted and lost the session: log in again
	LoggedOutKicked          LoggedOutReason = 3 // an administrator ended the session
	LoggedOutBanned          LoggedOutReason = 4 // an administrator banned the account
)

var reasonNames = [...]string{"Unknown", "LoggedInElsewhere", "ModuleRestarted", "Kicked", "Banned"}

// String returns the reason's name, or "LoggedOutReason(n)".
func (r LoggedOutReason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "LoggedOutReason(" + strconv.Itoa(int(r)) + ")"
}
