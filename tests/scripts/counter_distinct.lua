-- Like counter.lua, but response() remembers every counter value the
-- server echoed in both the path and the X-Counter header: each must be
-- new (a request built once and sent again would repeat its number).
-- done() prints the sums over the threads:
--   distinct: echoed=<responses> distinct=<new numbers> repeated=<others>

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

counter = 0
echoed, distinct, repeated = 0, 0, 0
local seen = {}

request = function()
   counter = counter + 1
   wrk.headers["X-Counter"] = counter
   return wrk.format(nil, "/echo?counter=" .. counter)
end

response = function(status, headers, body)
   echoed = echoed + 1
   local n = tonumber(body:match("^GET /echo%?counter=(%d+)\n"))
   if status == 200 and n and body:find("\nX%-Counter: " .. n .. "\n") and not seen[n] then
      seen[n] = true
      distinct = distinct + 1
   else
      repeated = repeated + 1
   end
end

done = function(summary, latency, requests)
   local e, d, r = 0, 0, 0
   for _, thread in ipairs(threads) do
      e = e + thread:get("echoed")
      d = d + thread:get("distinct")
      r = r + thread:get("repeated")
   end
   io.write(string.format("distinct: echoed=%d distinct=%d repeated=%d\n", e, d, r))
end
