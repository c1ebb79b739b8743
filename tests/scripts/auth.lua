-- wrk's scripts/auth.lua: log in at /authenticate, take the token from the
-- X-Token response header and send it on every later request, to
-- /resource (which answers 401 without it). done() prints:
--   auth: token=<token> resources=<200s from /resource> rejected=<others>

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

token = nil
path  = "/authenticate"
resources, rejected = 0, 0

request = function()
   return wrk.format("GET", path)
end

response = function(status, headers, body)
   if not token and status == 200 then
      token = headers["X-Token"]
      path  = "/resource"
      wrk.headers["X-Token"] = token
   elseif status == 200 and body == "ok\n" then
      resources = resources + 1
   elseif status ~= 200 then
      rejected = rejected + 1
   end
end

done = function(summary, latency, requests)
   local tokens, ok, bad = {}, 0, 0
   for _, thread in ipairs(threads) do
      tokens[#tokens + 1] = tostring(thread:get("token"))
      ok  = ok  + thread:get("resources")
      bad = bad + thread:get("rejected")
   end
   io.write(string.format("auth: token=%s resources=%d rejected=%d\n",
                          table.concat(tokens, ","), ok, bad))
end
