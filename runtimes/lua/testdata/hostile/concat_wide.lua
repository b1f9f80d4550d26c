-- One concatenation with many operands multiplies a string's size in a
-- single VM instruction.
spark.module{name = "concat_wide", version = "1.0"}
spark.on_tick(function()
  local s = string.rep("x", 100000)
  while true do
    s = s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s
  end
end)
