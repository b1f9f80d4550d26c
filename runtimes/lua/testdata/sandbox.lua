-- Answers the type of a dotted global path, e.g. `probe os.execute`.
spark.module{name = "sandbox", version = "1.0"}

spark.command("probe", "PATH", "type of a global path", function(path)
  local v = _G
  for part in string.gmatch(path, "[^%.]+") do
    if type(v) ~= "table" then return "nil" end
    v = rawget(v, part)
  end
  return type(v)
end)
