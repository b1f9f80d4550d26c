spark.module{name = "boom", version = "1.0"}

local ticks = 0
local function explode(t)
  return t.missing.field -- line 5: index a nil value
end

spark.on_tick(function(dt, tick)
  ticks = ticks + 1
  if tick == 1 then
    explode({})
  end
end)

spark.command("ticks", "", "", function() return tostring(ticks) end)
