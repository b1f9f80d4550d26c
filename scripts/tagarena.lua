-- tagarena.lua — tag on a field, for the browser game page (and any
-- client): players and bots move on a 1000 × 1000 field; whoever is "it"
-- tags the first player or bot it touches (within TAG_REACH), who becomes
-- "it" after TAG_COOLDOWN seconds. A tag gives the tagger +1 score, +1
-- kill and the tagged +1 death. The server decides the tags from the
-- positions, so a client only sends where it is.
--
-- Messages (little-endian NetBuffer encoding, typed fields):
--   1410 arena_move   c2s unreliable  x u16, y u16 (0..1000)
--   1411 arena_world  s2c unreliable  it u32, ids [u32], xs [u16], ys [u16],
--                                     tags [u16] (ten times a second)
--   1412 arena_names  s2c ordered     ids [u32], names [str 32], bots [u8]
--                                     (when someone comes or goes)
--   1413 arena_echo   c2s reliable    data bytes ≤ 4000 (answered by
--   1414 arena_echoed s2c reliable    the same bytes: a test of large messages)
-- Bots have ids from 4000000001 up, which no client has.

spark.module{name = "tagarena", version = "1.0"}

local FIELD = 1000
local TAG_REACH = 40
local TAG_COOLDOWN = 1.0
local BOTS = 3
local BOT_SPEED = 12 -- per tick (0.1 s)
local MAX = 40

local MOVE = spark.message{id = 1410, name = "arena_move", direction = "c2s",
  channel = "unreliable", fields = {{"x", "u16"}, {"y", "u16"}}}
local WORLD = spark.message{id = 1411, name = "arena_world", direction = "s2c",
  channel = "unreliable", fields = {{"it", "u32"}, {"ids", "array", MAX, "u32"},
    {"xs", "array", MAX, "u16"}, {"ys", "array", MAX, "u16"}, {"tags", "array", MAX, "u16"}}}
local NAMES = spark.message{id = 1412, name = "arena_names", direction = "s2c",
  channel = "ordered", fields = {{"ids", "array", MAX, "u32"},
    {"names", "array", MAX, "str", 32}, {"bots", "array", MAX, "u8"}}}
local ECHO = spark.message{id = 1413, name = "arena_echo", direction = "c2s",
  channel = "reliable", fields = {{"data", "bytes", 4000}}}
local ECHOED = spark.message{id = 1414, name = "arena_echoed", direction = "s2c",
  channel = "reliable", fields = {{"data", "bytes", 4000}}}

local things = {} -- id → {name, x, y, bot, tags, dx, dy}
local order = {}  -- ids in the order they came
local it = nil
local last_tag = -TAG_COOLDOWN

local function add(id, name, bot)
  if things[id] == nil then order[#order + 1] = id end
  things[id] = {name = name, x = math.random(100, FIELD - 100), y = math.random(100, FIELD - 100),
    bot = bot, tags = 0, dx = math.random(-1, 1), dy = math.random(-1, 1)}
end

local function remove(id)
  things[id] = nil
  for i, v in ipairs(order) do
    if v == id then table.remove(order, i) break end
  end
  if it == id then it = order[1] end
end

local function send_names()
  local w = spark.writer()
  local n = math.min(#order, MAX)
  w:u16(n)
  for i = 1, n do w:u32(order[i]) end
  w:u16(n)
  for i = 1, n do w:str(things[order[i]].name) end
  w:u16(n)
  for i = 1, n do w:u8(things[order[i]].bot and 1 or 0) end
  spark.broadcast(NAMES, w)
end

local function send_world()
  local n = math.min(#order, MAX)
  local w = spark.writer()
  w:u32(it or 0)
  w:u16(n)
  for i = 1, n do w:u32(order[i]) end
  w:u16(n)
  for i = 1, n do w:u16(math.floor(things[order[i]].x)) end
  w:u16(n)
  for i = 1, n do w:u16(math.floor(things[order[i]].y)) end
  w:u16(n)
  for i = 1, n do w:u16(things[order[i]].tags % 65536) end
  spark.broadcast(WORLD, w)
end

local function clamp(v) return math.max(0, math.min(FIELD, v)) end

local function move_bot(id, b)
  local chaser = things[it]
  if id == it then
    -- Chase the nearest other.
    local best, bd = nil, math.huge
    for oid, o in pairs(things) do
      if oid ~= id then
        local d = (o.x - b.x) ^ 2 + (o.y - b.y) ^ 2
        if d < bd then best, bd = o, d end
      end
    end
    if best then
      local d = math.sqrt(bd)
      if d > 0 then b.x, b.y = b.x + (best.x - b.x) / d * BOT_SPEED, b.y + (best.y - b.y) / d * BOT_SPEED end
    end
  elseif chaser and (chaser.x - b.x) ^ 2 + (chaser.y - b.y) ^ 2 < 200 ^ 2 then
    local d = math.max(1, math.sqrt((chaser.x - b.x) ^ 2 + (chaser.y - b.y) ^ 2))
    b.x, b.y = b.x - (chaser.x - b.x) / d * BOT_SPEED * 0.8, b.y - (chaser.y - b.y) / d * BOT_SPEED * 0.8
  else
    if math.random() < 0.05 then b.dx, b.dy = math.random(-1, 1), math.random(-1, 1) end
    b.x, b.y = b.x + b.dx * BOT_SPEED * 0.5, b.y + b.dy * BOT_SPEED * 0.5
  end
  b.x, b.y = clamp(b.x), clamp(b.y)
end

local function check_tag()
  local c = things[it]
  if c == nil or spark.now() - last_tag < TAG_COOLDOWN then return end
  for _, id in ipairs(order) do
    local o = things[id]
    if id ~= it and (o.x - c.x) ^ 2 + (o.y - c.y) ^ 2 <= TAG_REACH ^ 2 then
      c.tags = c.tags + 1
      if not c.bot then spark.add_score(it, 1, 1, 0) end
      if not o.bot then spark.add_score(id, 0, 0, 1) end
      it = id
      last_tag = spark.now()
      return
    end
  end
end

for i = 1, BOTS do add(4000000000 + i, "bot " .. i, true) end
it = order[1]

spark.on_admitted(function(id, name)
  add(id, name, false)
  send_names()
end)

spark.on_left(function(id)
  if things[id] == nil then return end
  remove(id)
  send_names()
end)

spark.on_message(MOVE, function(client, reader)
  local p = things[client]
  if p == nil then return end
  p.x, p.y = clamp(reader:u16()), clamp(reader:u16())
end)

spark.on_message(ECHO, function(client, reader)
  local n = reader:u16()
  spark.send(client, ECHOED, spark.writer():u16(n):bytes(reader:bytes(n)))
end)

spark.every(0.1, function()
  for id, t in pairs(things) do
    if t.bot then move_bot(id, t) end
  end
  check_tag()
  send_world()
end)
