-- init(args) prints what it got: args[0] is the URL, then the words after
-- it (after `--` on pace's command line). One line per thread:
--   args: n=<#args> 0=<url> 1=<word> 2=<word>

function init(args)
   io.write(string.format("args: n=%d 0=%s 1=%s 2=%s\n", #args, tostring(args[0]),
                          tostring(args[1]), tostring(args[2])))
end
