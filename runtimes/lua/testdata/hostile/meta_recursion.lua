-- Recursion through a metamethod: Go frames between Lua frames.
spark.module{name = "meta_recursion", version = "1.0"}
local t = setmetatable({}, {})
getmetatable(t).__index = function(tbl, k) return tbl[k .. "x"] end
spark.on_tick(function() local _ = t.a end)
