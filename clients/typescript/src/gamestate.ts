// GameStateSync (docs/protocol.md §9.2): the admission, and the entity types
// of the client's room. Parsed completely; any violation throws WireError.

import { Reader, WireError } from "./wire";
import { checkName } from "./schemas";

export interface EntityField {
  name: string;
  /** 0 bool, 1 int32, 2 uint32, 3 float, 4 vec3 */
  kind: number;
  /** 0 Public, 1 Private, 2 Party, 3 Spectator */
  visibility: number;
}

export interface EntityType {
  typeId: number;
  name: string;
  fields: EntityField[];
}

export interface GameStateSync {
  clientId: number;
  serverTime: number;
  tickRate: number;
  replicationRate: number;
  serverName: string;
  motd: string;
  map: string;
  mode: number;
  matchState: number;
  timeRemaining: number;
  types: EntityType[];
}

export function parseGameStateSync(payload: Uint8Array): GameStateSync {
  const r = new Reader(payload);
  const clientId = r.u32();
  const serverTime = r.finiteF32();
  const tickRate = r.u16();
  const replicationRate = r.u16();
  if (tickRate === 0 || replicationRate === 0) throw new WireError("GameStateSync rates must be > 0");
  const serverName = r.str(64);
  const motd = r.str(256);
  const map = r.str(64);
  const mode = r.u8();
  if (mode > 6) throw new WireError("GameStateSync mode");
  const matchState = r.u8();
  if (matchState > 3) throw new WireError("GameStateSync match_state");
  const timeRemaining = r.finiteF32();
  const typeCount = r.u16();
  // Each type takes at least 5 bytes: bound the count before allocating.
  if (typeCount * 5 > r.remaining) throw new WireError("GameStateSync type_count exceeds the payload");
  const types: EntityType[] = [];
  for (let i = 0; i < typeCount; i++) {
    const typeId = r.u16();
    const name = checkName(r.raw(r.u16()), 32, "entity type name");
    const fieldCount = r.u8();
    if (fieldCount > 64) throw new WireError("GameStateSync field_count");
    const fields: EntityField[] = [];
    for (let j = 0; j < fieldCount; j++) {
      const fname = checkName(r.raw(r.u16()), 32, "entity field name");
      const kind = r.u8();
      const visibility = r.u8();
      if (kind > 4 || visibility > 3) throw new WireError("GameStateSync field kind or visibility");
      fields.push({ name: fname, kind, visibility });
    }
    types.push({ typeId, name, fields });
  }
  r.end();
  return { clientId, serverTime, tickRate, replicationRate, serverName, motd, map, mode, matchState, timeRemaining, types };
}
