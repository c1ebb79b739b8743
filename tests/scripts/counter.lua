-- wrk's scripts/counter.lua: a per-thread counter changes the path and a
-- header of every request. Run against /echo, response() checks that the
-- server received both, and done() sums the threads' counts:
--   counter: requests=<made> echoed=<consistent echoes> mismatched=<others>

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

counter    = 0
echoed     = 0
mismatched = 0

request = function()
   path = "/echo?counter=" .. counter
   wrk.headers["X-Counter"] = counter
   counter = counter + 1
   return wrk.format(nil, path)
end

response = function(status, headers, body)
   local n = body:match("^GET /echo%?counter=(%d+)\n")
   if status == 200 and n and body:find("\nX%-Counter: " .. n .. "\n") then
      echoed = echoed + 1
   else
      mismatched = mismatched + 1
   end
end

done = function(summary, latency, requests)
   local made, ok, bad = 0, 0, 0
   for _, thread in ipairs(threads) do
      made = made + thread:get("counter")
      ok   = ok   + thread:get("echoed")
      bad  = bad  + thread:get("mismatched")
   end
   io.write(string.format("counter: requests=%d echoed=%d mismatched=%d\n", made, ok, bad))
end
