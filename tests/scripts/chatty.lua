-- Prints a whole line on every response, and one in done(), as scripts
-- that log do: to check the order of script output and the report.
local responses = 0

function response(status)
   responses = responses + 1
   io.write(string.format("response %d status %d\n", responses, status))
end

function done(summary)
   print("done: " .. summary.requests .. " requests")
end
