-- wrk's scripts/stop.lua: the thread stops itself after 100 responses.

local counter = 1

function response()
   if counter == 100 then
      wrk.thread:stop()
   end
   counter = counter + 1
end
