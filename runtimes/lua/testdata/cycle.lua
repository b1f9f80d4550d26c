spark.module{name = "cycle", version = "1.0"}
function save_state()
  local t = {}
  t.self = t
  return t
end
