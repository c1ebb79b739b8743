-- A request() that runs past the end of its table (as scripts taken from
-- benchmark suites do): every third call returns nil.
local paths = { "/a", "/b" }
local i = 0

function request()
   i = i + 1
   local path = paths[(i - 1) % 3 + 1]
   if path == nil then
      return nil
   end
   return wrk.format(nil, path)
end
