// Package client owns what a player process needs on top of the transport:
// connecting to a server with a pin or the known_hosts store in its data
// directory (trust on first use), and the Console — the line-oriented player
// and test console whose command registry game modules extend (the MMO client
// adds its mmo_session_* commands with Register and its message printers with
// OnMessage), and the World of replicated entities each connection keeps
// (the `entities` command lists it; bots feed their own World). Client-side
// prediction is package client/predict.
//
// The console prints events — what arrives from the server, and connection
// changes — as stable one-line texts that scripts match with `wait`:
//
//	connected to HOST:PORT as NAME (id N)
//	trusting new server HOST:PORT key ed25519:... (recorded in FILE)
//	server: NAME — MOTD
//	chat NAME: TEXT
//	match start: MAP mode MODE round N
//	match end: REASON winner N score S
//	scores: ID=SCORE ID=SCORE ...
//	respawn: client N entity E at X,Y,Z yaw DEG
//	entity spawn: ID TYPE owner N at X,Y,Z
//	entity destroy: ID
//	disconnected: REASON (DETAIL)
//
// It must never trust a server key silently (a recorded key is announced, a
// changed key is refused with the file and line to fix), and a module's
// command or message hook that panics is reported as an error line, never a
// crash of the console.
package client
