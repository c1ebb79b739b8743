-- A pipelined batch mixing GET and HEAD: the HEAD response in the middle
-- has a Content-Length and no body; the GETs around it have bodies.
init = function(args)
   local r = {}
   r[1] = wrk.format("GET", "/")
   r[2] = wrk.format("HEAD", "/")
   r[3] = wrk.format("GET", "/")
   req = table.concat(r)
end

request = function()
   return req
end
