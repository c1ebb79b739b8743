-- A script that only sets the request (wrk's post.lua): pace builds it once,
-- so it must cost nothing per request.
wrk.method = "POST"
wrk.body   = "foo=bar&baz=quux"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
