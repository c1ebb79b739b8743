-- request() fails on its 11th call in each thread: pace stops the run,
-- prints the error with its line (9) and traceback, then the report.

local calls = 0

function request()
   calls = calls + 1
   if calls > 10 then
      error("request failed on purpose")
   end
   return wrk.format()
end
