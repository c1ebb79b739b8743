-- Fails on purpose in the function named by the first word after the URL
-- (init, request, response, delay, done), or makes request() return a
-- number ("number"): in each thread after 5 requests, in init and done at
-- once. pace must stop with exit 3 and the error's file:line, never panic.
--   pace -s fail_in.lua <url> -- response

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

calls = 0

function init(args)
   mode = args[1]
   if mode == "init" then
      error("init failed on purpose")
   end
end

function request()
   calls = calls + 1
   if mode == "request" and calls > 5 then
      error("request failed on purpose")
   end
   if mode == "number" and calls > 5 then
      return 42
   end
   return wrk.format()
end

function response(status, headers, body)
   if mode == "response" and calls > 5 then
      error("response failed on purpose")
   end
end

function delay()
   if mode == "delay" and calls > 5 then
      error("delay failed on purpose")
   end
   return 0
end

function done(summary, latency, requests)
   if threads[1]:get("mode") == "done" then
      error("done failed on purpose")
   end
   io.write(string.format("done: requests=%d\n", summary.requests))
end
