-- Declarations only: the manifest test compares them field by field.
spark.module{name = "reg", version = "2.5"}

spark.message{id = 1000, name = "reg_pos", direction = "c2s", channel = "unreliable",
  min = 12, max = 12}
spark.message{id = 1001, name = "reg_chat", direction = "both", channel = "reliable",
  min = 2, max = 130, string_offset = 0, requires_admitted = false}
local state_id = spark.message{id = 1002, name = "reg_state", direction = "s2c",
  channel = "ordered", max = 64}
assert(state_id == 1002)

spark.command("reg_ping", "", "answers pong", function() return "pong" end)
spark.command("reg_echo", "WORDS...", "echoes its arguments", function(...)
  return table.concat({...}, ",")
end)
