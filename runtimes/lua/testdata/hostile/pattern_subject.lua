spark.module{name = "pattern_subject", version = "1.0"}
spark.on_tick(function()
  string.find(string.rep("a", 1e6) .. "b", "(a*)*b")
end)
