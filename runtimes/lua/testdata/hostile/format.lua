spark.module{name = "format", version = "1.0"}
spark.on_tick(function()
  local s = string.rep("x", 1000000)
  local f = string.rep("%s", 1000)
  string.format(f, unpack((function() local t = {} for i = 1, 1000 do t[i] = s end return t end)()))
end)
