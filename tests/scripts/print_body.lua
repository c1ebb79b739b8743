-- Prints the first response's body: against the built-in server's /echo,
-- the request as the server received it.
local printed = false

function response(status, headers, body)
   if not printed then
      io.write(body)
      printed = true
   end
end
