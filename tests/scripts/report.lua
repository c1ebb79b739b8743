-- wrk's scripts/report.lua: done() prints latency percentiles as CSV, and
-- pace adds a line with the summary and the stats objects' fields.

done = function(summary, latency, requests)
   io.write("------------------------------\n")
   for _, p in pairs({ 50, 90, 99, 99.999 }) do
      n = latency:percentile(p)
      io.write(string.format("%g%%,%d\n", p, n))
   end
   io.write(string.format("summary,%d,%d,%d,%d,%d\n", summary.duration, summary.requests,
                          summary.bytes, summary.errors.status, summary.errors.timeout))
   io.write(string.format("latency,%d,%d,%d,%d\n", latency.min, latency.max, #latency, latency[#latency]))
   io.write(string.format("requests,%d,%d\n", #requests, requests.max))
end
