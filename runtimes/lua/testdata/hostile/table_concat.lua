spark.module{name = "table_concat", version = "1.0"}
spark.on_tick(function()
  local s = string.rep("x", 100000)
  local t = {}
  for i = 1, 1000 do t[i] = s end
  table.concat(t)
end)
