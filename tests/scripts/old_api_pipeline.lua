-- A wrk 3.x script: init(args) calls wrk.init(args) itself, which wrk 4
-- turned into endless recursion. The pipelining depth is the first word
-- after the URL (default 1).

init = function(args)
   wrk.init(args)

   local depth = tonumber(args[1]) or 1
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format()
   end
   req = table.concat(r)
end

request = function()
   return req
end
