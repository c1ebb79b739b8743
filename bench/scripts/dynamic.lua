-- A new request built with wrk.format for every request (a Lua call per
-- request), with a per-thread counter in a header.
local counter = 0

request = function()
   counter = counter + 1
   return wrk.format(nil, "/index.html", { ["X-Counter"] = tostring(counter) })
end
