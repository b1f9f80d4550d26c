spark.module{name = "carry", version = "1.0"}

restored = nil
counter = counter or 0

function save_state()
  return {round = 3, it = 7, names = {"ann", "bob"}, flags = {[true] = "yes", ok = false},
    ratio = 0.5, nested = {deep = {deeper = {"x"}}}}
end

function on_reload(state)
  restored = state
end

spark.command("show", "", "", function()
  if restored == nil then return "nothing" end
  return string.format("round=%d it=%d names=%s,%s flag=%s ok=%s ratio=%g deep=%s",
    restored.round, restored.it, restored.names[1], restored.names[2],
    restored.flags[true], tostring(restored.flags.ok), restored.ratio,
    restored.nested.deep.deeper[1])
end)
