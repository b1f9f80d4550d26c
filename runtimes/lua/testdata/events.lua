-- Records every hook call in order; the test reads them with `seen`.
spark.module{name = "events", version = "1.0"}

local PING = spark.message{id = 1000, name = "ev_ping", direction = "c2s",
  channel = "reliable", min = 1, max = 1}

local seen = {}
local function note(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
  seen[#seen + 1] = table.concat(parts, " ")
end

spark.on_admitted(function(id, name, present) note("admitted", id, name, present) end)
spark.on_left(function(id, reason) note("left", id, reason) end)
spark.on_message(PING, function(client, reader, t) note("message", client, t, reader:u8()) end)
spark.on_match_start(function(map, round) note("match_start", map, round) end)
spark.on_match_end(function(reason, winner, score) note("match_end", reason, winner, score) end)
spark.on_map_change(function(map, index) note("map_change", map, index) end)
spark.on_tick(function(dt, tick) note("tick", dt, tick) end)

spark.command("seen", "", "lists the hook calls", function()
  local out = table.concat(seen, "\n")
  seen = {}
  return out
end)

print("loaded", 1, nil, true)
spark.log.warn("careful", 2)
