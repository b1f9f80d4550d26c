-- A room mode that greets every player who enters, at once: its first
-- message to a player is sent in the tick the room opens.
spark.module{name = "greets", version = "1", protocol = 3, oldest_protocol = 2}
local HI = spark.message{id = 1450, name = "greets_hi", direction = "s2c", channel = "ordered", min = 3, max = 40}
spark.on_admitted(function(id, name)
  spark.send(id, HI, spark.writer():str("hi " .. name))
end)
