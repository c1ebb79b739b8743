-- Looks response headers up in another case than the server sent them
-- (nginx: "ETag" over HTTP/1.1, "etag" over HTTP/2), and counts what
-- pairs() lists; done() prints the counts of all threads.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   found, missing, listed = 0, 0, 0
end

function response(status, headers, body)
   if headers["ETag"] and headers["etag"] and headers["ETAG"] == headers["ETag"] then
      found = found + 1
   else
      missing = missing + 1
   end
   for name, value in pairs(headers) do
      if name:lower() == "etag" then listed = listed + 1 end
   end
   wrk.thread:set("found", found)
   wrk.thread:set("missing", missing)
   wrk.thread:set("listed", listed)
end

function done(summary, latency, requests)
   local found, missing, listed = 0, 0, 0
   for _, thread in ipairs(threads) do
      found = found + (thread:get("found") or 0)
      missing = missing + (thread:get("missing") or 0)
      listed = listed + (thread:get("listed") or 0)
   end
   io.write(string.format("etag: found=%d missing=%d listed=%d\n", found, missing, listed))
end
