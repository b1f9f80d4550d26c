spark.module{name = "loop", version = "1.0"}
spark.on_tick(function() while true do end end)
