spark.module{name = "gsub", version = "1.0"}
spark.on_tick(function()
  local s = string.rep("a", 200000)
  local r = string.rep("b", 100000)
  string.gsub(s, "", r)
end)
