-- Echo: a c2s message carrying a string is answered with an s2c message.
spark.module{name = "echo", version = "1.0"}

local SAY = spark.message{id = 1000, name = "echo_say", direction = "c2s",
  channel = "reliable", min = 2, max = 66, string_offset = 0}
local REPLY = spark.message{id = 1001, name = "echo_reply", direction = "s2c",
  channel = "reliable", min = 6, max = 80}
local SHORT = spark.message{id = 1002, name = "echo_short", direction = "c2s",
  channel = "unreliable", min = 2, max = 2}

spark.on_message(SAY, function(client, reader, type_id)
  local text = reader:str()
  local w = spark.writer()
  w:u32(client):str("re: " .. text)
  local ok, err = spark.send(client, REPLY, w)
  assert(ok, err)
end)

-- Reads a u32 from a 2-byte payload: the reader must raise, not return 0.
spark.on_message(SHORT, function(client, reader)
  local v = reader:u32()
  spark.send(client, REPLY, spark.writer():u32(v):str("garbage"))
end)

spark.command("bad_send", "", "sends with an unknown type", function()
  spark.send(1, 5, "xx")
end)
