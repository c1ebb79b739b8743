-- request() returns something that is not an HTTP request: "GARBAGE" (the
-- default), or with the word "incomplete" after the URL a request whose
-- header never ends. pace must refuse it before the run, with the parser's
-- message and line:column.

function init(args)
   incomplete = args[1] == "incomplete"
end

function request()
   if incomplete then
      return "GET / HTTP/1.1\r\nHost: x\r\n"
   end
   return "GARBAGE\r\n\r\n"
end
