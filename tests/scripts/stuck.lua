-- A script that gets stuck in one of its functions, to test that pace
-- still ends the run. PACE_TEST_STUCK="<function> <loop>" (an environment
-- variable, as done() runs in the main state, which has no init(args)),
-- with function one of setup, init, request, response, delay, done and
-- loop one of
--   interpreted: a loop that calls a C function (LuaJIT runs it in its
--                interpreter, where an interrupt is seen), or
--   compiled:    a tight loop LuaJIT compiles (never sees an interrupt).
-- It gets stuck on the 20th call.

local where, how = (os.getenv("PACE_TEST_STUCK") or ""):match("(%a+) (%a+)")
local calls = 0

local function stuck()
   calls = calls + 1
   if calls < 20 then return end
   io.stderr:write("stuck.lua: stuck in " .. where .. "\n")
   -- For a test that waits until the script is stuck.
   local mark = os.getenv("PACE_TEST_STUCK_MARK")
   if mark then io.open(mark, "w"):close() end
   if how == "compiled" then
      local n = 0
      while true do n = n + 1 end
   else
      while true do os.clock() end
   end
end

function setup(thread)
   if where == "setup" then calls = 19 stuck() end
end

function init(args)
   if where == "init" then calls = 19 stuck() end
end

function request()
   if where == "request" then stuck() end
   return wrk.format()
end

function response()
   if where == "response" then stuck() end
end

function delay()
   if where == "delay" then stuck() end
   return 0
end

function done()
   if where == "done" then calls = 19 stuck() end
end
