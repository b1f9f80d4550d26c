-- The Lua side of the entity API test (host lua_entity_test.go): a "ball"
-- per player, moved by its inputs (answered with input_ack), with a private
-- "score" only its owner sees; a global "sun" whose angle turns every tick;
-- a player's ball goes when the player leaves.
spark.module{name = "balls", version = "1"}

local BALL = spark.entity_type{id = 60, name = "ball", position = "pos",
  box = {min = {x = -1, y = -1, z = -1}, max = {x = 1, y = 1, z = 1}},
  fields = {
    {name = "pos", kind = "vec3"},
    {name = "radius", kind = "float"},
    {name = "score", kind = "uint32", visibility = "private"},
  }}
local SUN = spark.entity_type{id = 61, name = "sun", fields = {{name = "angle", kind = "float"}}}

local balls, sun, angle = {}, nil, 0

spark.on_admitted(function(id)
  balls[id] = assert(spark.entity_spawn{type = BALL, owner = id, position = {x = id * 10},
    fields = {radius = 1.5, score = 4200 + id}})
end)

spark.on_left(function(id)
  spark.entity_destroy(balls[id])
  balls[id] = nil
end)

spark.on_input(function(id, input)
  local b = balls[id]
  if not b then return end
  local x, z = id * 10 + input.right, input.forward
  assert(spark.entity_move(b, x, 0, z))
  spark.input_ack(id, {seq = input.seq, position = {x = x, z = z}})
end)

spark.on_tick(function()
  if not sun then sun = assert(spark.entity_spawn{type = SUN, global = true}) end
  angle = (angle + 1) % 360
  spark.entity_set(sun, {angle = angle})
end)
