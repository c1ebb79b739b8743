-- wrk's post.lua (a static request: top-level assignments only), plus a
-- debug hook that counts every call into Lua in each state, so that the
-- test can see whether pace calls Lua per request. `-- dynamic` adds a
-- request() returning the same request (the control: one call per
-- request). done() prints one line per thread:
--   calls: init=<calls when init(args) returned> end=<calls at the end>

wrk.method = "POST"
wrk.body   = "foo=bar&baz=quux"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"

calls, init_calls = 0, 0
debug.sethook(function() calls = calls + 1 end, "c")

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   if args[1] == "dynamic" then
      local req
      request = function()
         req = req or wrk.format()
         return req
      end
   end
   init_calls = calls
end

function done(summary, latency, requests)
   for _, thread in ipairs(threads) do
      io.write(string.format("calls: init=%d end=%d\n",
                             thread:get("init_calls"), thread:get("calls")))
   end
end
