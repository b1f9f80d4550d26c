-- Grows a table by 20,000 entries a tick; the heap cap must notice. The
-- table is a local, reachable only as an upvalue of the tick handler.
spark.module{name = "heap", version = "1.0"}
local hoard = {}
spark.on_tick(function()
  for i = 1, 20000 do hoard[#hoard + 1] = i end
end)
