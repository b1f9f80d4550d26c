spark.module{name = "rep", version = "1.0"}
spark.on_tick(function() local s = string.rep("x", 1e9) end)
