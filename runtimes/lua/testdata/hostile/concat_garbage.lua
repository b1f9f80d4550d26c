-- Builds big strings and drops them: bounded per tick by the build allowance.
spark.module{name = "concat_garbage", version = "1.0"}
spark.on_tick(function()
  local s = string.rep("x", 1000000)
  local i = 0
  while true do i = i + 1; local t = s .. i end
end)
