spark.module{name = "writer", version = "1.0"}

local OUT = spark.message{id = 1500, name = "w_out", direction = "s2c",
  channel = "reliable", min = 0, max = 200}

spark.command("send", "", "", function()
  local w = spark.writer()
  w:u8(0xAB):u16(0x1234):u32(0xDEADBEEF):i32(-2):f32(1.5):bool(true)
  w:str("hi"):vec3(1, -2, 0.25):bytes("\0\255")
  assert(w:len() == 1 + 2 + 4 + 4 + 4 + 1 + 4 + 12 + 2)
  spark.broadcast(OUT, w)
  spark.broadcast(OUT, w:data(), 7)
  -- the writer may be reused after a send without changing what was sent
  w:u8(1)
  return tostring(w:len())
end)

spark.command("overflow", "", "", function() spark.writer():u8(256) end)
spark.command("toolong", "", "", function() spark.send(1, OUT, string.rep("x", 201)) end)

spark.command("roundtrip", "", "", function()
  -- A reader over bytes a writer built is not available to scripts (readers
  -- come with messages), so this checks the writer's data directly.
  local d = spark.writer():u16(258):data()
  return string.format("%d %d %d", #d, d:byte(1), d:byte(2))
end)
