-- tag.lua — a game of tag as a sparkhost module.
--
-- One player is "it". "It" tags another player by sending `tag_tag` with
-- the target's client id (the client decides who is in reach; the server
-- checks the rules: only "it" may tag, not itself, not a player who is not
-- here, and not within TAG_COOLDOWN seconds of the last tag, so there are no
-- instant tag-backs). The tagged player becomes "it".
--
-- Scores: a tag gives the tagger +1 score and +1 kill and the tagged player
-- +1 death. A round lasts ROUND_SECONDS; whoever is "it" when it ends loses
-- ROUND_PENALTY points. The next round starts INTERMISSION seconds later
-- with a random "it". Rounds need at least two players.
--
-- Messages (little-endian NetBuffer encoding, typed fields):
--   1400 tag_tag       c2s reliable  target u32
--   1401 tag_state     s2c ordered   it u32 (0: nobody), round u16,
--                                    seconds_left u16, running u8 (0/1)
--   1402 tag_announce  s2c reliable  text str (at most 200 bytes)
-- Console: tag_status, tag_restart.

spark.module{name = "tag", version = "1.0"}

local ROUND_SECONDS = 120
local ROUND_PENALTY = 3
local INTERMISSION = 5
local TAG_COOLDOWN = 1.0

-- Each message declares its fields, so clients decode them without this
-- file: `sparkhost client` prints `recv tag_state it=2 round=1 ...` and
-- sends `send tag_tag target=3`.
local TAG = spark.message{id = 1400, name = "tag_tag", direction = "c2s",
  channel = "reliable", fields = {{"target", "u32"}}}
local STATE = spark.message{id = 1401, name = "tag_state", direction = "s2c",
  channel = "ordered", fields = {{"it", "u32"}, {"round", "u16"},
    {"seconds_left", "u16"}, {"running", "u8"}}}
local ANNOUNCE = spark.message{id = 1402, name = "tag_announce", direction = "s2c",
  channel = "reliable", fields = {{"text", "str", 200}}}

local players = {}      -- client id → {name = ..., tags = n}
local count = 0         -- number of players
local it = nil          -- client id of "it"
local round = 0
local seconds_left = 0
local running = false
local last_tag = -TAG_COOLDOWN
local saved_tags = {}   -- tag counts carried across a reload, by client id

local function name_of(id)
  local p = players[id]
  return p and p.name or ("client " .. tostring(id))
end

local function announce(text)
  spark.broadcast(ANNOUNCE, spark.writer():str(text))
  spark.log.info(text)
end

local function broadcast_state()
  local w = spark.writer()
  w:u32(it or 0):u16(round % 65536):u16(seconds_left):u8(running and 1 or 0)
  spark.broadcast(STATE, w)
end

-- The ids in ascending order, so that math.random picks reproducibly.
local function player_ids()
  local ids = {}
  for id in pairs(players) do ids[#ids + 1] = id end
  table.sort(ids)
  return ids
end

local function random_player(except)
  local ids = player_ids()
  if except ~= nil and #ids > 1 then
    for i, id in ipairs(ids) do
      if id == except then table.remove(ids, i) break end
    end
  end
  if #ids == 0 then return nil end
  return ids[math.random(#ids)]
end

local function start_round()
  round = round + 1
  seconds_left = ROUND_SECONDS
  running = true
  it = random_player()
  last_tag = spark.now()
  announce(string.format("Round %d: %s is it!", round, name_of(it)))
  broadcast_state()
end

local function best_record()
  local best = spark.kv.get("record_tags")
  return tonumber(best) or 0
end

local function end_round(reason)
  running = false
  if it ~= nil then
    spark.add_score(it, -ROUND_PENALTY, 0, 0)
    announce(string.format("Round %d over (%s): %s was it and loses %d points",
      round, reason, name_of(it), ROUND_PENALTY))
  end
  -- The all-time record survives restarts: once a round, a durable write.
  for id, p in pairs(players) do
    if p.tags > best_record() then
      spark.kv.set("record_tags", tostring(p.tags))
      spark.kv.set("record_name", p.name)
      announce(string.format("New record: %s with %d tags", p.name, p.tags))
    end
  end
  broadcast_state()
  spark.after(INTERMISSION, function()
    if not running and count >= 2 then start_round() end
  end)
end

spark.on_admitted(function(id, name)
  if players[id] == nil then count = count + 1 end
  players[id] = {name = name, tags = saved_tags[id] or 0}
  saved_tags[id] = nil
  if not running and count >= 2 then
    start_round()
  else
    broadcast_state()
  end
end)

spark.on_left(function(id, reason)
  if players[id] == nil then return end
  players[id] = nil
  count = count - 1
  if not running then return end
  if count < 2 then
    running = false
    it = nil
    announce("Round stopped: not enough players")
    broadcast_state()
  elseif id == it then
    it = random_player()
    last_tag = spark.now()
    announce(string.format("%s left (%s); %s is it now", name_of(id), reason, name_of(it)))
    broadcast_state()
  end
end)

spark.on_message(TAG, function(client, reader)
  local target = reader:u32()
  if not running or client ~= it or target == client or players[target] == nil then
    return -- not a valid tag: ignore it (the client's view was stale)
  end
  if spark.now() - last_tag < TAG_COOLDOWN then
    return
  end
  it = target
  last_tag = spark.now()
  players[client].tags = players[client].tags + 1
  spark.add_score(client, 1, 1, 0)
  spark.add_score(target, 0, 0, 1)
  announce(string.format("%s tagged %s!", name_of(client), name_of(target)))
  broadcast_state()
end)

-- The round clock: once a second, on the game thread, within the budget.
spark.every(1, function()
  if not running then return end
  seconds_left = seconds_left - 1
  if seconds_left <= 0 then
    seconds_left = 0
    end_round("time")
  else
    broadcast_state()
  end
end)

spark.on_match_start(function(map, match_round)
  round = 0
  running = false
  if count >= 2 then start_round() end
end)

spark.on_match_end(function(reason)
  if running then end_round("match " .. string.lower(reason)) end
end)

spark.command("tag_status", "", "shows the round, who is it and the time left", function()
  local state
  if running then
    state = string.format("round %d: %s (id %d) is it, %d s left", round, name_of(it), it, seconds_left)
  else
    state = string.format("no round running (last round %d)", round)
  end
  local record = spark.kv.get("record_name")
  local tail = record and string.format("; record %s with %d tags", record, best_record()) or ""
  return string.format("%s, %d players%s", state, count, tail)
end)

spark.command("tag_restart", "", "ends the current round and starts a new one now", function()
  if count < 2 then return "need at least two players" end
  if running then end_round("restart") end
  start_round()
  return "round " .. round .. " started"
end)

-- Hot reload keeps the round going: the players come back through
-- on_admitted (the server announces every present client to a module that
-- loads), and pick up their tag counts from saved_tags.
function save_state()
  local tags = {}
  for id, p in pairs(players) do tags[id] = p.tags end
  return {round = round, it = it, seconds_left = seconds_left, running = running, tags = tags}
end

function on_reload(state)
  round = state.round or 0
  it = state.it
  seconds_left = state.seconds_left or 0
  running = state.running or false
  saved_tags = state.tags or {}
end
