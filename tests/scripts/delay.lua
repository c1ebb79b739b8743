-- wrk's scripts/delay.lua: a random 10-50 ms think time before each
-- request. done() prints the number of requests and the shortest and
-- longest delay each thread chose:
--   delay: requests=<n> min=<ms> max=<ms>

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

shortest, longest = math.huge, 0

function delay()
   local ms = math.random(10, 50)
   shortest = math.min(shortest, ms)
   longest  = math.max(longest, ms)
   return ms
end

function done(summary, latency, requests)
   local low, high = math.huge, 0
   for _, thread in ipairs(threads) do
      low  = math.min(low, thread:get("shortest"))
      high = math.max(high, thread:get("longest"))
   end
   io.write(string.format("delay: requests=%d min=%d max=%d\n", summary.requests, low, high))
end
