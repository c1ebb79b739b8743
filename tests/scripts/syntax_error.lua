-- A script with a syntax error on line 4: pace stops before connecting.

wrk.method = "POST"
if then
