-- Loops forever on tick 1 only; ticks before and after must run normally.
spark.module{name = "overrun", version = "1.0"}

local ticks = {}
spark.on_tick(function(dt, tick)
  if tick == 1 then
    while true do end
  end
  ticks[#ticks + 1] = tick
end)

spark.command("ticks", "", "", function() return table.concat(ticks, ",") end)
spark.command("spin", "", "never returns", function() while true do end end)
spark.command("greet", "NAME...", "", function(...) return "hello " .. table.concat({...}, ",") end)
spark.command("fail", "", "", function() error("no such player") end)
spark.command("table", "", "", function() return {} end)
