-- wrk's scripts/setup.lua: setup() gives each thread an id and a table with
-- thread:set; each thread counts its requests and responses and keeps a
-- table of them; done() reads everything back with thread:get:
--   thread <id> (<name>, weights <w1>+<w2>+<w3>) made <n> requests and got <m> responses, table <n>/<m>

local counter = 1
local threads = {}

function setup(thread)
   thread:set("id", counter)
   thread:set("config", { name = "worker-" .. counter, weights = { 1, 2, 3 } })
   table.insert(threads, thread)
   counter = counter + 1
end

function init(args)
   requests  = 0
   responses = 0
   tally     = { requests = 0, responses = 0 }

   local msg = "thread %d created as %s"
   print(msg:format(id, config.name))
end

function request()
   requests = requests + 1
   tally.requests = requests
   return wrk.request()
end

function response(status, headers, body)
   responses = responses + 1
   tally.responses = responses
end

function done(summary, latency, requests)
   for index, thread in ipairs(threads) do
      local id        = thread:get("id")
      local config    = thread:get("config")
      local requests  = thread:get("requests")
      local responses = thread:get("responses")
      local tally     = thread:get("tally")
      local msg = "thread %d (%s, weights %s) made %d requests and got %d responses, table %d/%d"
      print(msg:format(id, config.name, table.concat(config.weights, "+"), requests, responses,
                       tally.requests, tally.responses))
   end
end
