spark.module{name = "unpack", version = "1.0"}
spark.on_tick(function() local _ = {unpack({}, 1, 1e8)} end)
