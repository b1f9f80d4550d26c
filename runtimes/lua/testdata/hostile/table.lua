spark.module{name = "table", version = "1.0"}
spark.on_tick(function()
  local t = {}
  while true do t[#t + 1] = {} end
end)
