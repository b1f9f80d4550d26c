-- Reads two fields and replies: the Lua side of the module benchmark.
spark.module{name = "echo2", version = "1"}
local REQ = spark.message{id = 1200, name = "req", direction = "c2s", channel = "reliable", min = 8, max = 8}
local REP = spark.message{id = 1201, name = "rep", direction = "s2c", channel = "reliable", min = 8, max = 8}
spark.on_message(REQ, function(client, r)
  local a = r:u32()
  local b = r:u32()
  spark.send(client, REP, spark.writer():u32(a):u32(b))
end)
