spark.module{name = "concat", version = "1.0"}
spark.on_tick(function()
  local s = "x"
  while true do s = s .. s end
end)
