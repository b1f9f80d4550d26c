-- hello.lua — the smallest useful sparkhost module.
--
-- A client sends `hello_greet` with its name; the server answers with
-- `hello_reply`, a greeting that counts how many it has answered so far.
-- docs/lua-modules.md walks through this file line by line.
--
-- Everything a module can do goes through the global `spark` table. The
-- file's top level runs once, when the server loads the module: that is
-- where the module declares itself, its messages and its console commands,
-- and sets its handlers. After that, the server calls the handlers — never
-- two at a time, always on the game thread, within a time budget per tick.

-- 1. Who we are. The name owns our message types and prefixes our log
--    lines; the version shows up in the admin console.
spark.module{name = "hello", version = "1.0"}

-- 2. Our messages. Ids from 1000 up belong to modules; the server refuses
--    to load two modules that claim the same id. `fields` lists what the
--    payload holds, in order: each entry is {name, type, max}. The server
--    derives the payload's sizes from it, and the transport checks every
--    incoming payload against it (direction, channel, every field in bounds,
--    strings valid UTF-8, nothing left over) before our handler ever sees it.
--    Clients learn the declaration too: `messages` in `sparkhost client`
--    lists it, and `send hello_greet name=ann` encodes it for you.
local GREET = spark.message{
  id = 1000,
  name = "hello_greet",
  direction = "c2s",          -- clients send it to the server
  channel = "reliable",       -- delivered once, in any order
  fields = {
    {"name", "str", 32},      -- a NetBuffer string of at most 32 bytes
  },
  requires_admitted = true,   -- only from players who finished joining
}

local REPLY = spark.message{
  id = 1001,
  name = "hello_reply",
  direction = "s2c",          -- the server sends it to clients
  channel = "reliable",
  fields = {
    {"text", "str", 128},
  },
}

-- 3. Our state: plain Lua values. It lives as long as the module is loaded;
--    save_state/on_reload below carry it across a hot reload.
local greeted = 0

-- 4. Event hooks. The server calls them in the order things happened.
spark.on_admitted(function(id, name)
  spark.log.info("player joined:", name, "as client", id)
end)

-- 5. The message handler: `reader` reads the payload field by field. A read
--    past the end raises an error — the handler stops and the server logs a
--    fault with this file and line — so we never act on garbage.
spark.on_message(GREET, function(client, reader)
  local name = reader:str()
  greeted = greeted + 1
  local text = "Hello, " .. name .. "! You are greeting number " .. greeted .. "."
  -- Names are up to 32 bytes, so the text stays well within REPLY's 128.
  -- A writer builds the reply field by field; spark.send checks it against
  -- REPLY's declaration (direction and fields) before it leaves.
  local ok, err = spark.send(client, REPLY, spark.writer():str(text))
  if not ok then
    -- The client may have left since the message arrived: not a bug.
    spark.log.debug("reply not sent:", err)
  end
end)

-- 6. A console command for the server's operator: `hello_count`.
spark.command("hello_count", "", "how many greetings this module has answered",
  function()
    return "greetings answered: " .. greeted
  end)

-- 7. Hot reload: when the operator reloads this file, the old instance's
--    save_state() hands a value to the new instance's on_reload().
function save_state()
  return {greeted = greeted}
end

function on_reload(state)
  greeted = state.greeted or 0
end
