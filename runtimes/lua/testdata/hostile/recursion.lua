spark.module{name = "recursion", version = "1.0"}
local function deep(n) return 1 + deep(n + 1) end
spark.on_tick(function() deep(1) end)
