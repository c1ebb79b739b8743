-- Every request() keeps the thread busy for 4 ms of CPU: one thread can
-- then send at most 250 requests/s, however many connections are free.
request = function()
   local started = os.clock()
   while os.clock() - started < 0.004 do end
   return wrk.format()
end
