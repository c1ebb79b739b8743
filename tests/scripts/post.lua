-- wrk's scripts/post.lua: method, body and a header set at the top level
-- make a static POST, built once per thread. Against /echo, response()
-- checks what the server received, and done() prints:
--   post: echoed=<as expected> mismatched=<others>

wrk.method = "POST"
wrk.body   = "foo=bar&baz=quux"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

echoed, mismatched = 0, 0

function response(status, headers, body)
   local ok = status == 200
      and body:find("^POST /echo\n")
      and body:find("\nContent%-Type: application/x%-www%-form%-urlencoded\n")
      and body:find("\nContent%-Length: 16\n")
      and body:sub(-18) == "\n\nfoo=bar&baz=quux"
   if ok then
      echoed = echoed + 1
   else
      mismatched = mismatched + 1
   end
end

function done(summary, latency, requests)
   local ok, bad = 0, 0
   for _, thread in ipairs(threads) do
      ok  = ok  + thread:get("echoed")
      bad = bad + thread:get("mismatched")
   end
   io.write(string.format("post: echoed=%d mismatched=%d\n", ok, bad))
end
