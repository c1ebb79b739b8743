-- HEAD requests: the server answers with a Content-Length but no body, so
-- pace must know each response of the batch belongs to a HEAD request.
wrk.method = "HEAD"
