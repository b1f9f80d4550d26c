spark.module{name = "kvtest", version = "1.0"}

spark.command("set", "K V", "", function(k, v) spark.kv.set(k, v) return "ok" end)
spark.command("get", "K", "", function(k) return spark.kv.get(k) or "<nil>" end)
spark.command("del", "K", "", function(k) spark.kv.delete(k) return "ok" end)
spark.command("keys", "", "", function() return table.concat(spark.kv.keys(), ",") end)
spark.command("num", "", "", function() spark.kv.set("n", 42) return spark.kv.get("n") end)
