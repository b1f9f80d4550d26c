-- Tells every client what the module saw of it ("admitted NAME",
-- "resumed NAME"), so that a test sees a client whose connection dropped
-- and came back resumed, not admitted again (host resume_test.go).
spark.module{name = "seats", version = "1"}
local SEAT = spark.message{id = 1400, name = "seat", direction = "s2c", channel = "ordered",
  fields = {{"what", "str", 64}}}
spark.on_admitted(function(id, name)
  spark.send(id, SEAT, spark.writer():str("admitted " .. name))
end)
spark.on_resumed(function(id, name)
  spark.send(id, SEAT, spark.writer():str("resumed " .. name))
end)
