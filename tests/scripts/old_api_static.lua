-- A wrk 3.x script with a static request: init(args) sets the path and
-- calls wrk.init(args) itself; there is no request(). On pace the user's
-- init runs once per thread, nothing recurses and the request is built
-- once (wrk.format is counted through a wrapper). response() counts the
-- echoes of that path. done() prints one line per thread:
--   old api: inits=<n> formats=<n> echoed=<n>

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

local format = wrk.format
formats = 0
wrk.format = function(...)
   formats = formats + 1
   return format(...)
end

inits, echoed = 0, 0

init = function(args)
   inits = inits + 1
   wrk.path = "/echo?old"
   wrk.init(args)
end

response = function(status, headers, body)
   if status == 200 and body:find("^GET /echo%?old\n") then
      echoed = echoed + 1
   end
end

done = function(summary, latency, requests)
   for _, thread in ipairs(threads) do
      io.write(string.format("old api: inits=%d formats=%d echoed=%d\n",
                             thread:get("inits"), thread:get("formats"), thread:get("echoed")))
   end
end
