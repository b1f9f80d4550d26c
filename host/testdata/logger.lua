-- Logs one line at load and one in its first tick: the log-tagging test.
spark.module{name = "logger", version = "1"}
spark.log.info("loading the logger")
local said = false
spark.on_tick(function()
  if not said then
    said = true
    spark.log.info("first tick of the logger")
  end
end)
