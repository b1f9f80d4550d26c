spark.module{name = "timers", version = "1.0"}

local fired = {}
local function note(s) fired[#fired + 1] = s end

local once = spark.after(0.25, function(id) note("after@" .. spark.now()) end)
local cancelled = spark.after(0.1, function() note("cancelled-fired") end)
assert(spark.cancel(cancelled) == true)
assert(spark.cancel(cancelled) == false)

local n = 0
local rep
rep = spark.every(0.1, function(id)
  n = n + 1
  note("every" .. n)
  if n == 3 then spark.cancel(id) end
end)
assert(type(once) == "number" and once ~= rep)

spark.command("fired", "", "", function() return table.concat(fired, " ") end)
spark.command("later", "", "", function() spark.after(0, function() note("zero") end) end)
