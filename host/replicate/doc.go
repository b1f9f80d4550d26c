// Package replicate owns entity replication (protocol v3 §9.3) and the
// lag-compensation history of replicated entities: the entity types modules
// declare, the entities they spawn, and what each admitted client is sent
// about them — EntitySpawn when an entity becomes relevant to the client,
// EntityStateUpdate with the fields that changed and that the client may
// see, EntityDestroy when it stops being relevant or is destroyed, and a
// fresh GameStateSync when the set of types changes.
//
// Ownership: entity ids come in blocks of 2^24, one Block per module
// instance (ReserveBlock); a module may touch only the entities of its block
// and spawn only the types it declared. Ids are chosen by the module runtime
// inside its block (or allocated here when a spawn asks for id 0), so an
// out-of-process plugin can name its entities without a round trip.
//
// Frames: each client gets Rate replication frames per second, at its own
// phase of the tick schedule (clients are staggered by id), so a tick
// serves only its share of the clients.
//
// Relevance: an entity is relevant to a client when it is Global, owned by
// the client, the client's focus, or within InterestRadius of the client's
// viewpoint (entering at the radius, leaving beyond LeaveFactor times it, so
// an entity on the border does not flicker). Visibility per field: Public to
// every client the entity is relevant to, Private to its owner, Party to its
// owner, the clients of its party and spectators, Spectator to spectators.
//
// Loss recovery: EntityStateUpdate is unreliable. Every changed field is
// sent in the Repeats replication frames that follow the change (with its
// latest value), and every relevant entity is refreshed in full (all its
// visible fields) once per Refresh period, staggered by id. A client that
// lost an update has the value again within Repeats frames unless all of
// them were lost, and otherwise at the next refresh that arrives: a stale
// field stays stale one more period only with the probability of loss.
//
// It must never send a client a field that client may not see (the masks of
// §9.3 are computed per client, and a client whose visible set changes gets
// the entity destroyed and spawned again), never block the game thread on a
// slow client (sends are handed to the transport, whose queues are bounded),
// and never allocate per frame in steady state. A Replicator belongs to the
// game thread; only Schemas may be called from other goroutines.
package replicate
