-- A typed module declaring every field kind, and every kind as an array
-- element (ts_test.go: export → tsgen → tsc, and test/everykind.ts).
spark.module{name = "everykind", version = "1"}
spark.message{id = 1500, name = "every_kind", direction = "both", channel = "ordered", fields = {
  {"flags", "u8"}, {"hp", "u16"}, {"score", "u32"}, {"delta", "i32"}, {"speed", "f32"}, {"pos", "vec3"},
  {"name", "str", 16}, {"blob", "bytes", 8},
  {"a_u8", "array", 4, "u8"}, {"a_u16", "array", 4, "u16"}, {"a_u32", "array", 4, "u32"}, {"a_i32", "array", 4, "i32"},
  {"a_f32", "array", 4, "f32"}, {"a_vec3", "array", 2, "vec3"}, {"a_str", "array", 3, "str", 5}, {"a_bytes", "array", 3, "bytes", 4},
}}
spark.message{id = 1501, name = "opaque", direction = "s2c", channel = "unreliable", max = 64}
