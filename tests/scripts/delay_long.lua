-- Every request waits 5 s first: in wrk (reference 3.6) delay() precedes
-- every request, including the first of each connection, so a shorter run
-- sends nothing at all.

function delay()
   return 5000
end
