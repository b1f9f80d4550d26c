-- Tries to swallow the budget error with pcall.
spark.module{name = "pcall_loop", version = "1.0"}
spark.on_tick(function()
  while true do pcall(function() while true do end end) end
end)
