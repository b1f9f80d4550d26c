-- A module whose tick never returns, and whose handler fails on demand:
-- the server must stop it within its budget and keep ticking.
spark.module{name = "runaway", version = "1"}
local POKE = spark.message{id = 1100, name = "poke", direction = "c2s", channel = "reliable", min = 1, max = 1}
local PONG = spark.message{id = 1101, name = "pong", direction = "s2c", channel = "reliable", min = 1, max = 1}
local spin = false
spark.on_message(POKE, function(client, r)
  local v = r:u8()
  if v == 1 then error("poked the wrong way") end
  if v == 2 then spin = true end
  spark.send(client, PONG, spark.writer():u8(v))
end)
spark.on_tick(function()
  if spin then
    spin = false
    while true do end
  end
end)
