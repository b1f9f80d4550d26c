spark.module{name = "pattern", version = "1.0"}
spark.on_tick(function()
  -- under the subject limit, but exponential in backtracking
  local s = string.rep("a", 200000)
  string.find(s, "a*a*a*a*a*a*b")
end)
