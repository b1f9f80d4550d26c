-- Says goodbye, then kicks: what a module sends a client just before it
-- kicks it, in the same handler, must reach the client before the
-- Disconnect.
spark.module{name = "farewell", version = "1"}
local LEAVE = spark.message{id = 1300, name = "leave_me", direction = "c2s", channel = "reliable",
  fields = {{"count", "u8"}}}
local BYE = spark.message{id = 1301, name = "bye", direction = "s2c", channel = "reliable",
  fields = {{"n", "u8"}}}
spark.on_message(LEAVE, function(client, r)
  local count = r:u8()
  for n = 1, count do
    spark.send(client, BYE, spark.writer():u8(n))
  end
  spark.kick(client, "farewell said")
end)
