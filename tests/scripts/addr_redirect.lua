-- setup() sends every thread to another server than the URL's: the port
-- in the URL's query (`?to=<port>`), resolved with wrk.lookup and checked
-- with wrk.connect, becomes thread.addr. init() prints it:
--   thread addr: <host:port>

local addrs = nil

function setup(thread)
   if not addrs then
      local port = wrk.path:match("to=(%d+)")
      addrs = wrk.lookup("127.0.0.1", port)
      for i = #addrs, 1, -1 do
         if not wrk.connect(addrs[i]) then
            table.remove(addrs, i)
         end
      end
      assert(#addrs > 0, "nothing listens on port " .. port)
   end
   thread.addr = addrs[1]
end

function init(args)
   print("thread addr: " .. tostring(wrk.thread.addr))
end
