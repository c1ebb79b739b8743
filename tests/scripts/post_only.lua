-- wrk's scripts/post.lua exactly: nothing but top-level assignments, so the
-- request is static, built once per thread, and must cost nothing per
-- request compared with no script at all.

wrk.method = "POST"
wrk.body   = "foo=bar&baz=quux"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
