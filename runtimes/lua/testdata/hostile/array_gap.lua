-- gopher-lua fills an array's gap with nils in one instruction.
spark.module{name = "array_gap", version = "1.0"}
spark.on_tick(function()
  local keep = {}
  while true do
    local t = {}
    t[60000000] = 1
    keep[#keep + 1] = t
  end
end)
