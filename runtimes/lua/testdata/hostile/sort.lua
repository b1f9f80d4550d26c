spark.module{name = "sort", version = "1.0"}
spark.on_tick(function()
  local t = {}
  for i = 1, 200000 do t[i] = (i * 7919) % 200003 end
  while true do table.sort(t) table.sort(t, function(a, b) return a > b end) end
end)
