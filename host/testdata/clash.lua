-- Claims hello.lua's message id 1000.
spark.module{name = "clash", version = "1"}
spark.message{id = 1000, name = "mine", direction = "c2s", channel = "reliable", min = 0, max = 4}
