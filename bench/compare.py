#!/usr/bin/env python3
"""Benchmarks pace against its peers on the same nginx, in the same run.

Every figure is a ratio against a peer measured minutes apart on the same
machine, server and core layout: these VMs lose a varying share of their
CPU to the host, so absolute numbers drift between runs while ratios hold.

  closed   wrk vs pace, closed loop -t1 -c50: requests/s and client CPU
           time per request (user + sys from /usr/bin/time / requests);
           with bench/uring-probe built, also its epoll loop ("floor": a
           client that sends and counts and measures nothing; "stamped":
           the same with a clock read at each send and the kernel's receive
           stamp on each response, as pace measures), so pace's cost reads
           against the least any epoll client pays here
  one      the same with one connection (-c1): the round trip, where
           whatever the tool does between a response and the next request
           (its wake-up included) counts in every request
  lua      wrk vs pace running the same Lua script, closed loop -t1 -c50:
           bench/scripts/static.lua (sets method/body/headers only) and
           dynamic.lua (wrk.format in request() for every request):
           requests per CPU-second
  static   what a static script costs: each of wrk and pace with no script
           and with static.lua (a POST with a body), closed loop -t1 -c50
           on nginx's /post (200 "posted" for both): requests per
           CPU-second with the script / without
  paced    pace vs wrk2 vs oha at -R 10000 -c50: achieved rate, pacing
           jitter seen on the wire (bench/pacing.py: grid p50/p99),
           CPU per request, and pace's corrected - uncorrected p50
  wide     the same at -t2 -c1000 (pace and wrk2)
  plans    pace's arrival plans at -R 10000 -t1 -c50: constant, Poisson
           and stages (2000/s, ramp to 10000/s, hold, ramp down): how far
           actual sends are from intended ones (schedule lag p50/p99, from
           pace's own JSON), achieved rate and CPU per request
  shards   one plan (-R 10000 -t1 -c48) sent by one pace, then by three
           shards (--shard i/3, one --start-at) on the same CPU 1: the
           achieved rate and pacing jitter on the wire (grid p50/p99
           against one even grid at 10000/s), and CPU per request
  wire     what pace measures about itself: pace, wrk and oha closed loop
           -t1 -c1 for 5 s under bench/wire.py, which captures the traffic
           and takes each request's gap to its response on the wire; the
           p50/p99 each tool reports, the wire's, and reported - wire (us);
           and each tool's turnaround on the wire, from a response to its
           next request (turn_p50/p99): what it adds to every round trip
  h2       HTTP/2: pace --http2 --streams 10 vs h2load -m10 on nginx's h2c
           port, -t1 -c10: closed loop (requests/s, CPU per request), then
           paced at 10000/s and 50000/s (h2load --rps R/10 per client):
           achieved rate, pace's schedule lag p50/p99, pacing jitter on the
           wire (bench/pacing.py --h2: one HEADERS frame is one request),
           CPU per request. Skipped with a line when h2load is missing.
  rate     rate per core: paced -t1 -c100 -d10s at -R 30000, 50000, 70000
           and 90000, pace vs wrk2, every tool at one rate before the next:
           achieved rate (the tool's own), share of what its schedule plans
           (wrk2 staggers its connects 5 ms apart, so plans 2.5% less),
           pace's schedule lag p99 (JSON schedule_lag), corrected latency
           p99 (pace's JSON; wrk2 --latency), CPU per request; then per
           tool the highest rate it held (share >= 99%, and for pace lag
           p99 <= 100 us), and pace CPU per request / wrk2 at each rate;
           with how busy the server's core was (nginx's one worker nears
           100% at 70,000/s here, and then its queue sets the lag)
  rate-serve
           the same against `pace serve` on CPU 0 (port $BENCH_SERVE_PORT,
           default 18090), which keeps part of its core idle at these
           rates: the generator's own limit
  h2-serve HTTP/2 against a server faster than the client: pace --http2
           vs h2load, h2c closed loop against `pace serve` on CPU 0, at
           -c10 x 10 streams and -c1 x 100 streams: requests/s, CPU per
           request, and pace's requests in flight on average against its
           slots (JSON concurrency): how many of them pace kept busy
  grpc     gRPC unary calls, closed loop, -t1 -c10 x 10 streams: pace vs
           ghz (-c 100 --connections 10) against grpc-go's TestService on
           CPU 0 (calls/s, CPU per call); then what gRPC adds to pace's
           HTTP/2: a unary call against a plain HTTP/2 POST with a body of
           the same size, both to `pace serve` on CPU 0; and paced calls at
           5,000/s, pace -R vs ghz --rps: the calls' HEADERS frames on the
           wire (bench/pacing.py: grid p50/p99). Needs ghz and the
           grpc-go server ($GHZ, $GRPC_SERVER, else on PATH, else what
           `bench/peers.sh ghz grpc-server` built)
  h3       HTTP/3 against `pace serve --http3` on CPU 0 (QUIC on the UDP
           port of its HTTPS port's number), -t1, 10 connections x 10
           streams, closed loop 5 s: pace --http3 vs oha --http-version 3
           -c 10 -p 10 (built with --features http3: $PACE_BENCH_OHA_H3,
           default /work/spike-h3/oha/bin/oha; missing, pace alone):
           requests/s, client CPU per request, the server's CPU per request
           (/proc/PID/stat), pace's mean in flight, the ratios pace / oha;
           then pace --http2 over TLS to the same server (h2 by ALPN), the
           same load: CPU per request of HTTP/3 / HTTP/2, client and server;
           then pace --http3 paced at -R 10000: schedule lag p50/p99 and
           corrected latency p99 from its JSON (no grid on the wire: QUIC's
           packets are encrypted, see h3_paced)

$PACE_BASE names an earlier pace binary: closed, one, paced, wide, plans, wire, rate and rate-serve
then measure it too, in the same run ("base"), for before/after ratios; h2 and h2-serve too
if it has --http2, h3 if it has --http3.

The server (nginx, one worker, bench/nginx-up) is pinned to CPU 0 and the
generator to CPU 1. Medians over ROUNDS rounds. Needs: nginx-light, taskset,
/usr/bin/time; for closed/lua/static/wire wrk; for paced/wide/shards/wire/h2
tcpdump (run as root);
for paced/wide/shards/h2 python3-numpy (Debian); a release build of pace;
optionally wrk2 (paced, wide, rate) and oha:
$WRK2 and $OHA if set, else wrk2 and oha on PATH, else what bench/peers.sh
built in bench/peers/ (or $PEERS); for h2, h2load ($H2LOAD, else on PATH;
Debian nghttp2-client). $BENCH_PORT (default 18080) is nginx's HTTP/1.1
port, $BENCH_H2_PORT (default 18081) its h2c port.

usage: bench/compare.py [--rounds N] [--only closed,one,lua,static,paced,wide,plans,shards,wire,h2,rate,rate-serve,h2-serve,h3,grpc]
"""
import argparse, json, os, re, shlex, shutil, socket, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PACE = os.environ.get('PACE', os.path.join(ROOT, 'target', 'release', 'pace'))
PACE_BASE = os.environ.get('PACE_BASE')
WRK = shutil.which('wrk')


def peer(variable, name, built):
    """Where a peer is: $variable if set, else name on PATH, else where
    bench/peers.sh builds it (bench/peers/ in this clone, or $PEERS)."""
    return (os.environ.get(variable) or shutil.which(name)
            or os.path.join(os.environ.get('PEERS') or os.path.join(HERE, 'peers'), *built))


WRK2 = peer('WRK2', 'wrk2', ('wrk2', 'wrk'))
# bench/uring-probe's closed loop (cd bench/uring-probe && cargo build --release).
FLOOR = os.path.join(HERE, 'uring-probe', 'target', 'release', 'uring-probe')
OHA = peer('OHA', 'oha', ('oha', 'bin', 'oha'))
H2LOAD = os.environ.get('H2LOAD') or shutil.which('h2load')
GHZ = peer('GHZ', 'ghz', ('ghz', 'bin', 'ghz'))
GRPC_SERVER = peer('GRPC_SERVER', 'grpc-test-server', ('grpc-test-server',))
# oha built with its http3 feature (the oha of bench/peers.sh has none).
OHA_H3 = os.environ.get('PACE_BENCH_OHA_H3') or '/work/spike-h3/oha/bin/oha'
PORT = int(os.environ.get('BENCH_PORT', '18080'))
URL = f'http://127.0.0.1:{PORT}/index.html'
SERVE_PORT = int(os.environ.get('BENCH_SERVE_PORT', '18090'))
SERVE_URL = f'http://127.0.0.1:{SERVE_PORT}/'
# nginx's h2c listener (HTTP/2 by prior knowledge), the same locations.
H2_PORT = int(os.environ.get('BENCH_H2_PORT', '18081'))
H2_URL = f'http://127.0.0.1:{H2_PORT}/index.html'
# nginx's /post answers 200 "posted" to a GET and to a POST with a body.
POST_URL = f'http://127.0.0.1:{PORT}/post'
# pacing.py needs numpy: Debian's python3-numpy is for /usr/bin/python3.
PYTHON_WITH_NUMPY = os.environ.get('PACING_PYTHON', '/usr/bin/python3')
PARTS = ('closed', 'one', 'lua', 'static', 'paced', 'wide', 'plans', 'shards', 'wire', 'h2', 'rate', 'rate-serve',
         'h2-serve', 'h3', 'grpc')


def have(path):
    return path and os.path.exists(path) and os.access(path, os.X_OK)


def missing_tools(parts):
    """What the chosen parts need and this machine lacks: (what, how to get it)."""
    missing = []
    def need(ok, what, how):
        if not ok:
            missing.append((what, how))
    need(shutil.which('nginx') or os.path.exists('/usr/sbin/nginx'), 'nginx', 'apt-get install nginx-light')
    if {'closed', 'one', 'lua', 'static', 'wire'} & set(parts):
        need(WRK, 'wrk', 'apt-get install wrk')
    need(shutil.which('taskset'), 'taskset', 'apt-get install util-linux')
    need(have('/usr/bin/time'), '/usr/bin/time', 'apt-get install time')
    if {'paced', 'wide', 'shards', 'wire', 'h2', 'grpc'} & set(parts):
        need(shutil.which('tcpdump') or os.path.exists('/usr/sbin/tcpdump'), 'tcpdump', 'apt-get install tcpdump')
    if {'paced', 'wide', 'shards', 'h2', 'grpc'} & set(parts):
        numpy = have(PYTHON_WITH_NUMPY) and subprocess.run(
            [PYTHON_WITH_NUMPY, '-c', 'import numpy'], capture_output=True).returncode == 0
        need(numpy, f'numpy for {PYTHON_WITH_NUMPY}',
             'apt-get install python3-numpy (or set PACING_PYTHON to a python with numpy)')
    return missing


def timed(cmd):
    """Runs cmd on CPU 1; returns (stdout, cpu_seconds)."""
    with tempfile.NamedTemporaryFile('r') as t:
        out = subprocess.run(['/usr/bin/time', '-f', '%U %S', '-o', t.name, 'taskset', '-c', '1'] + cmd,
                             capture_output=True, text=True, check=True).stdout
        user, system = map(float, t.read().split()[-2:])
    return out, user + system


def requests_of(out):
    m = re.search(r'(\d+) requests in', out) or re.search(r'responses=(\d+)', out)  # wrk, wrk2, pace; the probe
    if m:
        return int(m.group(1))
    counts = re.findall(r'\[\d+\] (\d+) responses', out)  # oha's status code distribution
    if counts:
        return sum(map(int, counts))
    raise ValueError('no request count in output:\n' + out[-1500:])


def rate_of(out):
    return float((re.search(r'Requests/sec:\s+([\d.]+)', out) or re.search(r' rps=([\d.]+)', out)).group(1))


def to_us(text):
    m = re.match(r'([\d.]+)(us|ms|s|m)$', text)
    return float(m.group(1)) * {'us': 1, 'ms': 1e3, 's': 1e6, 'm': 60e6}[m.group(2)]


def p50s(out):
    """(corrected p50, uncorrected p50) in us from a pace/wrk2 -U report."""
    values = re.findall(r'^ 50\.000%\s+(\S+)$', out, re.M)
    return tuple(to_us(v) for v in values[:2])


def paced_run(cmd, rate, port=PORT, h2=False, udp=None):
    """Runs cmd on CPU 1 under bench/pacing.py (which watches the request
    packets on the wire; with h2, the HEADERS frames of h2c; with udp, the
    QUIC datagrams of a request's size, (min, max) bytes); returns (pacing
    figures, stdout, cpu s)."""
    with tempfile.NamedTemporaryFile('r') as t, tempfile.NamedTemporaryFile('r') as o:
        wrapped = ['/usr/bin/time', '-f', '%U %S', '-o', t.name, 'sh', '-c',
                   'exec taskset -c 1 ' + shlex.join(cmd) + ' > ' + o.name]
        report = subprocess.run([PYTHON_WITH_NUMPY, os.path.join(HERE, 'pacing.py')] + (['--h2'] if h2 else [])
                                + (['--udp'] + [str(n) for n in udp] if udp else [])
                                + [str(port), str(rate), '2', '--'] + wrapped, capture_output=True, text=True).stdout
        figures = {k: float(re.match(r'[\d.]+', v).group()) for k, v in re.findall(r'(\w+)=(\S+)', report)}
        user, system = map(float, t.read().split()[-2:])
        return figures, o.read(), user + system


def median_table(title, rows):
    def cell(value):  # small figures (microseconds per request) need two decimals
        return f'{value:.2f}' if abs(value) < 10 else f'{value:.1f}'
    print(f'\n== {title}')
    for name, samples in rows.items():
        cells = '  '.join(f'{k}={cell(statistics.median(v))}' for k, v in samples.items() if v)
        print(f'  {name:6} {cells}')


def paces():
    """pace, and the baseline pace when $PACE_BASE names one."""
    return [('pace', PACE)] + ([('base', PACE_BASE)] if PACE_BASE else [])


def closed(rounds, conns=50):
    tools = [(name, [binary, '-t1', f'-c{conns}', '-d5s', URL]) for name, binary in [('wrk', WRK)] + paces()]
    if have(FLOOR):
        floor = [FLOOR, 'epoll', '-c', str(conns), '-d', '5', '-p', str(PORT)]
        tools += [('floor', floor), ('stamped', floor + ['--stamp'])]
    rows = {name: {'rps': [], 'cpu_us': []} for name, _ in tools}
    for _ in range(rounds):
        for name, cmd in tools:
            out, cpu = timed(cmd)
            rows[name]['rps'].append(rate_of(out))
            rows[name]['cpu_us'].append(cpu / requests_of(out) * 1e6)
    median_table('closed loop -t1 -c%d (median of %d)' % (conns, rounds), rows)
    cpu_us = {name: statistics.median(samples['cpu_us']) for name, samples in rows.items()}
    for name, _ in paces():
        rps = statistics.median(rows[name]['rps']) / statistics.median(rows['wrk']['rps'])
        print(f'  {name} CPU per request / wrk = {cpu_us[name] / cpu_us["wrk"]:.2f}   {name} rps / wrk = {rps:.2f}')
        if 'floor' in cpu_us:
            print(f'  {name} CPU per request / floor = {cpu_us[name] / cpu_us["floor"]:.2f}   '
                  f'/ stamped = {cpu_us[name] / cpu_us["stamped"]:.2f}')
    if 'floor' in cpu_us:
        print(f'  floor CPU per request / wrk = {cpu_us["floor"] / cpu_us["wrk"]:.2f}   stamped / wrk = '
              f'{cpu_us["stamped"] / cpu_us["wrk"]:.2f} (bench/uring-probe\'s epoll loop: one send and one receive '
              'a request, no parsing beyond the framing, no recording; stamped adds the clock at each send and the '
              'kernel receive stamp)')
    else:
        print('  note: no floor (bench/uring-probe not built: cd bench/uring-probe && cargo build --release)')


def lua(rounds):
    for script in ('static', 'dynamic'):
        path = os.path.join(HERE, 'scripts', script + '.lua')
        rows = {'wrk': {'rps': [], 'req_per_cpu_s': []}, 'pace': {'rps': [], 'req_per_cpu_s': []}}
        for _ in range(rounds):
            for name, cmd in [('wrk', [WRK]), ('pace', [PACE])]:
                out, cpu = timed(cmd + ['-t1', '-c50', '-d5s', '-s', path, URL])
                rows[name]['rps'].append(rate_of(out))
                rows[name]['req_per_cpu_s'].append(requests_of(out) / cpu)
        median_table(f'lua {script}.lua, closed loop -t1 -c50 (median of {rounds})', rows)
        w, p = (statistics.median(rows[n]['req_per_cpu_s']) for n in ('wrk', 'pace'))
        print(f'  pace requests per CPU-second / wrk = {p / w:.2f}')


def static_cost(rounds):
    path = os.path.join(HERE, 'scripts', 'static.lua')
    rows = {f'{tool} {kind}': {'rps': [], 'req_per_cpu_s': []}
            for tool in ('wrk', 'pace') for kind in ('plain', 'static')}
    for _ in range(rounds):
        for tool, binary in [('wrk', WRK), ('pace', PACE)]:
            for kind, script in [('plain', []), ('static', ['-s', path])]:
                out, cpu = timed([binary, '-t1', '-c50', '-d5s'] + script + [POST_URL])
                row = rows[f'{tool} {kind}']
                row['rps'].append(rate_of(out))
                row['req_per_cpu_s'].append(requests_of(out) / cpu)
    median_table(f'static.lua vs no script on /post, closed loop -t1 -c50 (median of {rounds})', rows)
    for tool in ('wrk', 'pace'):
        plain, static = (statistics.median(rows[f'{tool} {kind}']['req_per_cpu_s']) for kind in ('plain', 'static'))
        print(f'  {tool} requests per CPU-second with static.lua / without = {static / plain:.2f}')


def paced(rounds, threads, conns, label):
    rate = 10000
    tools = [(name, [binary, f'-t{threads}', f'-c{conns}', '-d10s', f'-R{rate}', '-U', URL])
             for name, binary in paces()]
    if have(WRK2):
        tools.append(('wrk2', [WRK2, f'-t{threads}', f'-c{conns}', '-d10s', f'-R{rate}', '-U', URL]))
    if have(OHA) and threads == 1:
        tools.append(('oha', [OHA, '--no-tui', '--latency-correction', '-q', str(rate), '-c', str(conns),
                              '-z', '10s', URL]))
    rows = {name: {'achieved': [], 'grid_p50': [], 'grid_p99': [], 'cpu_us': [], 'co_gap_us': []}
            for name, _ in tools}
    for _ in range(rounds):
        for name, cmd in tools:
            figures, out, cpu = paced_run(cmd, rate)
            row = rows[name]
            for key in ('achieved', 'grid_p50', 'grid_p99'):
                if key in figures:
                    row[key].append(figures[key])
            requests = requests_of(out)
            row['cpu_us'].append(cpu / requests * 1e6)
            if name in ('pace', 'base'):
                corrected, uncorrected = p50s(out)
                row['co_gap_us'].append(corrected - uncorrected)
    median_table(f'{label}: -R {rate} -t{threads} -c{conns} (median of {rounds})', rows)
    base = rows['pace']
    for peer in rows:
        if peer not in ('pace', 'base') and rows[peer]['grid_p99']:
            print(f'  pace grid_p99 / {peer} = '
                  f'{statistics.median(base["grid_p99"]) / statistics.median(rows[peer]["grid_p99"]):.3f}   '
                  f'pace CPU per request / {peer} = '
                  f'{statistics.median(base["cpu_us"]) / statistics.median(rows[peer]["cpu_us"]):.2f}')


PLANS = [
    ('constant', ['-R10000']),
    ('poisson', ['-R10000', '--arrival', 'poisson', '--seed', '1']),
    ('stages', ['-R2000', '--stages', '3s:10000,4s:10000,3s:2000']),
]


def plans(rounds):
    """Schedule lag (actual - intended send) for each plan, from pace's
    JSON: a Poisson or staged plan must be kept as well as the even one."""
    rows = {f'{name} {plan}': {'achieved': [], 'lag_p50': [], 'lag_p99': [], 'cpu_us': []}
            for name, _ in paces() for plan, _ in PLANS}
    for _ in range(rounds):
        for name, binary in paces():
            for plan, options in PLANS:
                if name == 'base' and plan != 'constant':
                    continue
                duration = [] if plan == 'stages' else ['-d10s']
                out, cpu = timed([binary, '-t1', '-c50', '-e'] + duration + options + [URL])
                report = json.loads(out)
                lag = report['schedule_lag']['percentiles_us']
                row = rows[f'{name} {plan}']
                row['achieved'].append(report['requests_per_sec'])
                row['lag_p50'].append(lag['50'])
                row['lag_p99'].append(lag['99'])
                row['cpu_us'].append(cpu / max(report['requests'], 1) * 1e6)
    median_table(f'plans at -R 10000 -t1 -c50 (median of {rounds})', {k: v for k, v in rows.items() if v['lag_p50']})


def shards(rounds):
    """The same plan from one instance and from three shards started
    together: on the wire the server must see the same one even schedule."""
    rate, count = 10000, 3
    rows = {name: {'achieved': [], 'grid_p50': [], 'grid_p99': [], 'cpu_us': []}
            for name in ('1 instance', f'{count} shards')}
    plan = ['-t1', '-c48', '-d10s', f'-R{rate}', '-e']
    for _ in range(rounds):
        for name, shards in (('1 instance', 1), (f'{count} shards', count)):
            with tempfile.TemporaryDirectory() as out, tempfile.NamedTemporaryFile('r') as t:
                if shards == 1:
                    script = f'taskset -c 1 {shlex.join([PACE] + plan + [URL])} > {out}/0.json'
                else:
                    # A start 1 s ahead: every shard has connected by then.
                    script = 'start=$(python3 -c "import time; print(f\'{time.time() + 1:.6f}\')")\n'
                    for i in range(shards):
                        cmd = [PACE] + plan + ['--shard', f'{i}/{shards}', URL]
                        script += f'taskset -c 1 {shlex.join(cmd)} --start-at "$start" > {out}/{i}.json &\n'
                    script += 'wait\n'
                wrapped = ['/usr/bin/time', '-f', '%U %S', '-o', t.name, 'sh', '-c', script]
                report = subprocess.run([PYTHON_WITH_NUMPY, os.path.join(HERE, 'pacing.py'), str(PORT), str(rate),
                                         '2', '--'] + wrapped, capture_output=True, text=True).stdout
                figures = {k: float(re.match(r'[\d.]+', v).group()) for k, v in re.findall(r'(\w+)=(\S+)', report)}
                cpu = sum(map(float, t.read().split()[-2:]))
                requests = sum(json.load(open(f'{out}/{i}.json'))['requests'] for i in range(shards))
            row = rows[name]
            for key in ('achieved', 'grid_p50', 'grid_p99'):
                if key in figures:
                    row[key].append(figures[key])
            row['cpu_us'].append(cpu / max(requests, 1) * 1e6)
    median_table(f'shards: -R {rate} -t1 -c48, one instance or {count} shards on CPU 1 (median of {rounds})', rows)


def wire_run(cmd):
    """Runs cmd on CPU 1 under bench/wire.py (tcpdump on CPU 0); returns
    (wire figures, cmd's stdout). A failed run stops compare.py with wire.py's line."""
    run = subprocess.run([sys.executable, os.path.join(HERE, 'wire.py'), str(PORT), '--tcpdump-cpu', '0',
                          '--timeout', '60', '--', 'taskset', '-c', '1'] + cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit('compare.py: ' + (run.stderr.strip().splitlines() or [f'wire.py exited {run.returncode}'])[-1])
    out, _, line = run.stdout.rstrip('\n').rpartition('\n')
    return {k: float(v) for k, v in re.findall(r'(\w+)=([\d.]+)', line)}, out


def reported_latency(name, out):
    """(requests, p50 us, p99 us) as the tool reports them."""
    if name == 'wrk':  # --latency: "    50%   45.00us"
        p50, p99 = (to_us(re.search(rf'^\s+{p}%\s+(\S+)$', out, re.M).group(1)) for p in (50, 99))
        return requests_of(out), p50, p99
    report = json.loads(out)
    if name == 'oha':  # --output-format json: seconds
        latency = report['latencyPercentiles']
        return sum(report['statusCodeDistribution'].values()), latency['p50'] * 1e6, latency['p99'] * 1e6
    latency = report['latency']['corrected']['percentiles_us']  # pace -e
    return report['requests'], latency['50'], latency['99']


def wire(rounds):
    """What each tool reports against what the wire shows, one connection,
    closed loop: the request-to-response gaps on loopback are what a tool
    should see; reported - wire is the tool's own overhead and error."""
    tools = [(name, [binary, '-t1', '-c1', '-d5s', '-e', URL]) for name, binary in paces()]
    tools.append(('wrk', [WRK, '-t1', '-c1', '-d5s', '--latency', URL]))
    if have(OHA):
        tools.append(('oha', [OHA, '-c', '1', '-z', '5s', '--no-tui', '--output-format', 'json', URL]))
    keys = ('requests', 'pairs', 'p50', 'wire_p50', 'diff_p50', 'p99', 'wire_p99', 'diff_p99', 'turn_p50', 'turn_p99')
    rows = {name: {k: [] for k in keys} for name, _ in tools}
    for _ in range(rounds):
        for name, cmd in tools:
            figures, out = wire_run(cmd)
            requests, p50, p99 = reported_latency(name, out)
            row = rows[name]
            for key, value in (('requests', requests), ('pairs', figures['pairs']), ('p50', p50), ('p99', p99),
                               ('wire_p50', figures['wire_p50']), ('wire_p99', figures['wire_p99']),
                               ('diff_p50', p50 - figures['wire_p50']), ('diff_p99', p99 - figures['wire_p99']),
                               ('turn_p50', figures['turn_p50']), ('turn_p99', figures['turn_p99'])):
                row[key].append(value)
    print(f'\n== wire: closed loop -t1 -c1 -d5s, reported vs request-to-response on the wire, and the '
          f'turnaround (turn_: from a response to the next request, on the wire), us (median of {rounds})')
    for name, samples in rows.items():
        m = {k: statistics.median(v) for k, v in samples.items()}
        print(f'  {name:6} requests={m["requests"]:.0f} pairs={m["pairs"]:.0f}  '
              + '  '.join(f'{k}={m[k]:.1f}' for k in keys[2:]))


def speaks_http2(binary):
    """Whether a pace binary takes --http2 and --streams (an earlier one stops
    at the unknown option)."""
    return subprocess.run([binary, '--http2', '--streams', '2', '--version'], capture_output=True).returncode == 0


def h2load_figures(out):
    """(requests done, req/s, {kind: count} of failures) from h2load's summary."""
    rate = re.search(r'^finished in \S+, ([\d.]+) req/s', out, re.M)
    counts = re.search(r'^requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, (\d+) failed, '
                       r'(\d+) errored, (\d+) timeout', out, re.M)
    status = re.search(r'^status codes: \d+ 2xx, \d+ 3xx, (\d+) 4xx, (\d+) 5xx', out, re.M)
    if not (rate and counts and status):
        raise ValueError('no h2load summary in output:\n' + out[-1500:])
    failures = dict(zip(('failed', 'errored', 'timeout', '4xx', '5xx'),
                        map(int, counts.groups()[1:] + status.groups())))
    return int(counts.group(1)), float(rate.group(1)), failures


def pace_figures(out):
    """(requests, req/s, {kind: count} of errors, the JSON) from a pace -e report."""
    try:
        report = json.loads(out)
    except ValueError:
        sys.exit('compare.py: pace printed no JSON report: ' + (out.strip().splitlines() or ['(nothing)'])[-1][:200])
    return report['requests'], report['requests_per_sec'], report['errors'], report


H2_CONNS, H2_STREAMS = 10, 10
H2_RATES = (10000, 50000)


def h2(rounds, base):
    """pace --http2 vs h2load on nginx's h2c port, -t1 -c10 with 10 streams
    each: closed loop, then paced. pace runs with -e (its JSON: requests,
    errors, schedule lag)."""
    c, m = H2_CONNS, H2_STREAMS
    paces_ = [('pace', PACE)] + ([('base', PACE_BASE)] if base else [])
    errors = {}  # tool -> {kind: count} over the h2 runs: what it says failed or was not sent
    warned = {}  # pace's warnings (codes) over the paced runs -> in how many runs
    paced_runs = 0

    def completed(name, requests, out):
        """A run that completed nothing (h2c refused, another server on the
        port) stops compare.py with one line."""
        if requests == 0:
            said = [l for l in out.strip().splitlines() if l.strip()]
            sys.exit(f'compare.py: {name} completed no requests on {H2_URL}'
                     + (f': {said[-1].strip()[:200]}' if said else ''))
        return requests

    def note_errors(name, counts):
        for kind, count in counts.items():
            errors.setdefault(name, {}).setdefault(kind, 0)
            errors[name][kind] += count

    h2_closed(rounds, paces_, H2_URL, 'nginx', c, m, completed, note_errors)

    for rate in H2_RATES:
        tools = [(name, [binary, '--http2', '--streams', str(m), '-t1', f'-c{c}', '-d10s', '-R', str(rate), '-e',
                         H2_URL]) for name, binary in paces_]
        tools.append(('h2load', [H2LOAD, '-t1', f'-c{c}', f'-m{m}', '-D', '10', '--rps', str(rate // c), H2_URL]))
        keys = ('achieved', 'reported', 'lag_p50', 'lag_p99', 'grid_p50', 'grid_p99', 'win1ms_p99', 'per_segment',
                'cpu_us')
        rows = {name: {k: [] for k in keys} for name, _ in tools}
        for _ in range(rounds):
            for name, cmd in tools:
                figures, out, cpu = paced_run(cmd, rate, H2_PORT, h2=True)
                row = rows[name]
                for key in ('achieved', 'grid_p50', 'grid_p99', 'win1ms_p99', 'per_segment'):
                    if key in figures:
                        row[key].append(figures[key])
                if name == 'h2load':
                    requests, reported, failed = h2load_figures(out)
                else:
                    requests, reported, failed, report = pace_figures(out)
                    lag = report['schedule_lag']['percentiles_us']
                    if name == 'pace':
                        paced_runs += 1
                        for code in {w.get('code', '?') for w in report.get('warnings', [])}:
                            warned[code] = warned.get(code, 0) + 1
                    row['lag_p50'].append(lag['50'])
                    row['lag_p99'].append(lag['99'])
                note_errors(name, failed)
                row['reported'].append(reported)
                row['cpu_us'].append(cpu / completed(name, requests, out) * 1e6)
        median_table(f'h2 paced -R {rate} -t1 -c{c}, {m} streams each (h2load --rps {rate // c} per client), '
                     f'h2c (median of {rounds})', rows)
        for name, _ in paces_:
            if rows[name]['grid_p99'] and rows['h2load']['grid_p99']:
                print(f'  {name} grid_p99 / h2load = '
                      f'{statistics.median(rows[name]["grid_p99"]) / max(statistics.median(rows["h2load"]["grid_p99"]), 1):.3f}   '
                      f'{name} CPU per request / h2load = '
                      f'{statistics.median(rows[name]["cpu_us"]) / statistics.median(rows["h2load"]["cpu_us"]):.2f}')
    for name, counts in errors.items():
        if any(counts.values()):
            print(f'  note: {name} over the h2 runs: ' + ', '.join(f'{kind} {n}' for kind, n in counts.items() if n))
    if warned:
        print(f'  note: pace warned in its paced runs: '
              + ', '.join(f'{code} in {n} of {paced_runs}' for code, n in sorted(warned.items()))
              + ' (generator_cpu: its message says whether pace was busy, starved by other processes, or late in bursts)')


def h2_closed(rounds, paces_, url, server, c, m, completed, note_errors):
    """pace --http2 vs h2load in a closed loop of -t1 -c{c} with {m} streams
    each against url: requests/s and CPU per request, and pace's mean in
    flight (its JSON's concurrency, where it has one)."""
    tools = [(name, [binary, '--http2', '--streams', str(m), '-t1', f'-c{c}', '-d5s', '-e', url])
             for name, binary in paces_]
    tools.append(('h2load', [H2LOAD, '-t1', f'-c{c}', f'-m{m}', '-D', '5', url]))
    rows = {name: {'rps': [], 'cpu_us': [], 'in_flight': []} for name, _ in tools}
    for _ in range(rounds):
        for name, cmd in tools:
            out, cpu = timed(cmd)
            if name == 'h2load':
                requests, rps, failed = h2load_figures(out)
            else:
                requests, rps, failed, report = pace_figures(out)
                in_flight = (report.get('concurrency') or {}).get('mean_in_flight')
                if in_flight is not None:  # not in a base older than the figure
                    rows[name]['in_flight'].append(in_flight)
            note_errors(name, failed)
            rows[name]['rps'].append(rps)
            rows[name]['cpu_us'].append(cpu / completed(name, requests, out) * 1e6)
    median_table(f'h2 closed loop against {server} -t1 -c{c}, {m} streams each ({c * m} slots), h2c '
                 f'(median of {rounds})', rows)
    for name, _ in paces_:
        print(f'  {name} rps / h2load = '
              f'{statistics.median(rows[name]["rps"]) / statistics.median(rows["h2load"]["rps"]):.2f}   '
              f'{name} CPU per request / h2load = '
              f'{statistics.median(rows[name]["cpu_us"]) / statistics.median(rows["h2load"]["cpu_us"]):.2f}')


def h2_serve(rounds, base, url):
    """HTTP/2 against `pace serve`, faster than one client thread: the
    client's own cost sets the rate."""
    paces_ = [('pace', PACE)] + ([('base', PACE_BASE)] if base else [])

    def completed(name, requests, out):
        if requests == 0:
            sys.exit(f'compare.py: {name} completed no requests on {url}: ' + out.strip()[-200:])
        return requests

    def note_errors(name, counts):
        if any(counts.values()):
            print(f'  note: {name} counted errors: ' + ', '.join(f'{k} {n}' for k, n in counts.items() if n))

    for c, m in ((10, 10), (1, 100)):
        h2_closed(rounds, paces_, url, 'pace serve', c, m, completed, note_errors)


def process_cpu(pid):
    """User + system CPU seconds of a process so far, all its threads
    (utime and stime of /proc/PID/stat)."""
    with open(f'/proc/{pid}/stat') as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def speaks_http3(binary):
    """Whether a pace binary takes --http3 (an earlier one stops at the
    unknown option)."""
    return subprocess.run([binary, '--http3', '--streams', '2', '--version'], capture_output=True).returncode == 0


def oha_h3_figures(out, seconds):
    """(successful responses, their rate /s, {kind: count} of errors) from
    oha --output-format json: the responses with a status over -z's
    seconds. Not oha's own requestsPerSec nor its summary's total: after
    -z, oha's HTTP/3 waits for the server's idle timeout to end its
    connections (30 s for pace serve), and that wait is in its total."""
    try:
        report = json.loads(out)
    except ValueError:
        sys.exit('compare.py: oha printed no JSON report: ' + (out.strip().splitlines() or ['(nothing)'])[-1][:200])
    responses = sum(report['statusCodeDistribution'].values())
    return responses, responses / seconds, dict(report.get('errorDistribution') or {})


H3_CONNS, H3_STREAMS, H3_RATE, H3_SECONDS = 10, 10, 10000, 5
# A GET of `/` to pace serve is a 53-61 byte QUIC packet (60 the most
# common), each more request packed with it 28 bytes; one of
# acknowledgements only is 31-37, the handshake's and MTU probes 1200 up:
# (min, max, one request, each more) for pacing.py --udp.
H3_REQUEST_BYTES = (50, 1199, 60, 28)


def h3(rounds, base):
    """HTTP/3 against `pace serve --http3` on CPU 0, -t1, 10 connections x
    10 streams on CPU 1: pace vs oha (its http3 feature) in a closed loop;
    pace's HTTP/3 against its HTTP/2 over TLS on the same server; pace's
    HTTP/3 paced. Each client's CPU from /usr/bin/time, the server's from
    /proc/PID/stat around each run."""
    c, m = H3_CONNS, H3_STREAMS
    paces_ = [('pace', PACE)] + ([('base', PACE_BASE)] if base else [])
    oha = have(OHA_H3)
    if not oha:
        print(f'\nh3: no oha with HTTP/3 at {OHA_H3} (set PACE_BENCH_OHA_H3, or build it: '
              f'cargo install oha --locked --features http3 --root DIR, then PACE_BENCH_OHA_H3=DIR/bin/oha): '
              'pace alone')
    errors = {}  # tool -> {kind: count} over the h3 runs

    def note_errors(name, counts):
        for kind, count in counts.items():
            if count:
                errors.setdefault(name, {}).setdefault(kind, 0)
                errors[name][kind] += count

    load_average = [open('/proc/loadavg').read().split()[0]]
    server = BuiltInServer(['--http3'])
    with server as url:
        load = ['-k', '-t1', f'-c{c}', '--streams', str(m), '-e']
        tools = [(f'{name} h3', [binary, '--http3'] + load + [f'-d{H3_SECONDS}s', url]) for name, binary in paces_]
        if oha:
            # -p is oha's requests in flight per connection, HTTP/3's too.
            # Its worker threads left at its default (one per physical
            # core), all on CPU 1 as pace's one: --worker-threads 1 measured
            # a little slower here, so this is oha at its best on one core.
            tools.append(('oha h3', [OHA_H3, '--http-version', '3', '-c', str(c), '-p', str(m), '-z', f'{H3_SECONDS}s',
                                     '--insecure', '--no-tui', '--output-format', 'json', url]))
        tools += [(f'{name} h2', [binary, '--http2'] + load + [f'-d{H3_SECONDS}s', url]) for name, binary in paces_]
        rows = {name: {'rps': [], 'cpu_us': [], 'server_us': [], 'in_flight': []} for name, _ in tools}
        for _ in range(rounds):
            for name, cmd in tools:
                before = process_cpu(server.process.pid)
                out, cpu = timed(cmd)
                server_cpu = process_cpu(server.process.pid) - before
                if name.startswith('oha'):
                    requests, rps, failed = oha_h3_figures(out, H3_SECONDS)
                else:
                    requests, rps, failed, report = pace_figures(out)
                    in_flight = (report.get('concurrency') or {}).get('mean_in_flight')
                    if in_flight is not None:
                        rows[name]['in_flight'].append(in_flight)
                if requests == 0:
                    said = [l for l in out.strip().splitlines() if l.strip()]
                    sys.exit(f'compare.py: {name} completed no requests on {url}'
                             + (f': {said[-1].strip()[:200]}' if said else ''))
                note_errors(name, failed)
                row = rows[name]
                row['rps'].append(rps)
                row['cpu_us'].append(cpu / requests * 1e6)
                row['server_us'].append(server_cpu / requests * 1e6)
        med = lambda name, key: statistics.median(rows[name][key])
        median_table(f'h3 closed loop against pace serve --http3 -t1 -c{c}, {m} streams each ({c * m} slots), '
                     f'{H3_SECONDS} s; server_us = pace serve\'s CPU per request (median of {rounds})',
                     {name: rows[name] for name, _ in tools if name.endswith(' h3')})
        for name, _ in paces_:
            if oha:
                print(f'  {name} CPU per request / oha = {med(f"{name} h3", "cpu_us") / med("oha h3", "cpu_us"):.2f} '
                      f'(goal <= 0.5)   {name} rps / oha = {med(f"{name} h3", "rps") / med("oha h3", "rps"):.2f} '
                      '(goal >= 2)')
            else:
                print(f'  {name} / oha: no oha with HTTP/3 (above)')
        median_table(f'HTTP/3 vs HTTP/2 (TLS, h2 by ALPN) of pace, same server, -t1 -c{c}, {m} streams each, '
                     f'{H3_SECONDS} s (median of {rounds})',
                     {name: rows[name] for name, _ in tools if name.startswith(('pace', 'base'))})
        for name, _ in paces_:
            print(f'  {name} CPU per request HTTP/3 / HTTP/2 = '
                  f'{med(f"{name} h3", "cpu_us") / med(f"{name} h2", "cpu_us"):.2f} (client), '
                  f'{med(f"{name} h3", "server_us") / med(f"{name} h2", "server_us"):.2f} (server)')
        h3_paced(rounds, paces_, url, server, note_errors)
    for name, counts in errors.items():
        print(f'  note: {name} over the h3 runs: ' + ', '.join(f'{kind} {n}' for kind, n in counts.items())
              + (' (the requests in flight that -z cuts off)' if name.startswith('oha') else ''))
    load_average.append(open('/proc/loadavg').read().split()[0])
    print(f'  note: 1-minute load average {load_average[0]} before, {load_average[1]} after (server and client '
          f'take up to 2; more means something else ran)')


def h3_paced(rounds, paces_, url, server, note_errors):
    """pace --http3 paced at H3_RATE: how far its sends are from their
    schedule (its JSON's schedule_lag), the corrected latency p99, and the
    send grid on the wire (pacing.py --udp: QUIC is encrypted, so a
    request's packet is told from one of acknowledgements only by its size,
    H3_REQUEST_BYTES)."""
    c, m, rate = H3_CONNS, H3_STREAMS, H3_RATE
    tools = [(name, [binary, '--http3', '-k', '-t1', f'-c{c}', '--streams', str(m), f'-d{H3_SECONDS}s', f'-R{rate}',
                     '-e', url]) for name, binary in paces_]
    keys = ('achieved', 'wire_rate', 'grid_p50', 'grid_p99', 'lag_p50', 'lag_p99', 'p99', 'cpu_us', 'work',
            'server_us')
    rows = {name: {k: [] for k in keys} for name, _ in tools}
    warned, runs = {}, 0
    for _ in range(rounds):
        for name, cmd in tools:
            before = process_cpu(server.process.pid)
            wire, out, cpu = paced_run(cmd, rate, port=SERVE_PORT, udp=H3_REQUEST_BYTES)
            server_cpu = process_cpu(server.process.pid) - before
            requests, achieved, failed, report = pace_figures(out)
            note_errors(name + ' paced', failed)
            if name == 'pace':
                runs += 1
                for code in {w.get('code', '?') for w in report.get('warnings', [])}:
                    warned[code] = warned.get(code, 0) + 1
            lag = report['schedule_lag']['percentiles_us']
            row = rows[name]
            row['achieved'].append(achieved)
            for key, figure in (('wire_rate', 'achieved'), ('grid_p50', 'grid_p50'), ('grid_p99', 'grid_p99')):
                if figure in wire:
                    row[key].append(wire[figure])
            row['lag_p50'].append(lag['50'])
            row['lag_p99'].append(lag['99'])
            row['p99'].append(report['latency']['corrected']['percentiles_us']['99'])
            row['cpu_us'].append(cpu / max(requests, 1) * 1e6)
            work = report.get('generator', {}).get('busiest_thread_work_share')
            if work is not None:  # not in a base older than the figure
                row['work'].append(work * 100)
            row['server_us'].append(server_cpu / max(requests, 1) * 1e6)
    median_table(f'h3 paced -R {rate} -t1 -c{c}, {m} streams each, {H3_SECONDS} s: lag (schedule lag) and p99 '
                 f'(corrected latency) in us from pace\'s JSON, work = pace\'s thread working % (on the CPU less '
                 f'its spins between sends; cpu_us counts the spins) (median of {rounds})', rows)
    print(f'  note: grid_p50/p99 = sends on the wire against an even grid (us), wire_rate = requests a second '
          f'on the wire, told by packet size ({H3_REQUEST_BYTES[0]}-{H3_REQUEST_BYTES[1]} bytes of UDP payload, '
          f'{H3_REQUEST_BYTES[2]} for one request and {H3_REQUEST_BYTES[3]} more for each request packed with it)')
    if warned:
        print('  note: pace warned in its paced runs: '
              + ', '.join(f'{code} in {n} of {runs}' for code, n in sorted(warned.items())))


class GrpcGo:
    """grpc-go's TestService (tests/grpc-go) on CPU 0 for the duration of a
    with block: its address, and its schema as a descriptor set."""

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.protoset = os.path.join(self.dir.name, 'test.protoset')
        subprocess.run([GRPC_SERVER, '-protoset', self.protoset], check=True)
        self.process = subprocess.Popen(['taskset', '-c', '0', GRPC_SERVER], stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith('listening '):
            self.process.kill()
            sys.exit(f'compare.py: the grpc-go server did not start: {line!r}')
        return line.split()[1], self.protoset

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()
        self.dir.cleanup()


GRPC_UNARY = 'grpc.testing.TestService/UnaryCall'
GRPC_RATE = 5000
# The schema of the call to `pace serve`, which echoes any gRPC call.
ECHO_PROTO = ('syntax = "proto3"; package demo;\n'
              'service Echo { rpc Say (Note) returns (Note); }\n'
              'message Note { string text = 1; }\n')


def ghz_figures(out):
    """(calls, calls/s, calls not OK) of ghz's summary."""
    count = int(re.search(r'Count:\s+(\d+)', out).group(1))
    rate = float(re.search(r'Requests/sec:\s+([\d.]+)', out).group(1))
    ok = sum(int(n) for n in re.findall(r'\[OK\]\s+(\d+) responses', out))
    return count, rate, count - ok


def grpc_paced(rounds, addr, call, protoset):
    """Paced unary calls at GRPC_RATE against grpc-go: pace -R against
    ghz --rps, the HEADERS frames of the calls on the wire (pacing.py)."""
    port = int(addr.rsplit(':', 1)[1])
    rate = GRPC_RATE
    tools = [('pace', [PACE] + call + ['-t1', '-c10', '--streams', '10', '-d10s', '-R', str(rate), '-e',
                                       f'http://{addr}/']),
             ('ghz', [GHZ, '--insecure', '--protoset', protoset, '--call', GRPC_UNARY, '-d', '{}', '-c', '100',
                      '--connections', '10', '--rps', str(rate), '-z', '10s', addr])]
    keys = ('achieved', 'lag_p99', 'grid_p50', 'grid_p99', 'win1ms_p99', 'cpu_us')
    rows = {name: {k: [] for k in keys} for name, _ in tools}
    for _ in range(rounds):
        for name, cmd in tools:
            figures, out, cpu = paced_run(cmd, rate, port, h2=True)
            row = rows[name]
            for key in ('achieved', 'grid_p50', 'grid_p99', 'win1ms_p99'):
                if key in figures:
                    row[key].append(figures[key])
            if name == 'ghz':
                calls = ghz_figures(out)[0]
            else:
                calls, _, _, report = pace_figures(out)
                row['lag_p99'].append(report['schedule_lag']['percentiles_us']['99'])
            row['cpu_us'].append(cpu / max(calls, 1) * 1e6)
    median_table(f'gRPC paced -R {rate} against grpc-go, -t1, 10 connections x 10 streams, the calls\' '
                 f'HEADERS on the wire (median of {rounds})', rows)


def grpc_part(rounds):
    """pace --grpc vs ghz against grpc-go, then a unary call vs a plain
    HTTP/2 POST of the same size against `pace serve`."""
    with GrpcGo() as (addr, protoset):
        call = ['--grpc', GRPC_UNARY, '--protoset', protoset]
        tools = [('pace', [PACE] + call + ['-t1', '-c10', '--streams', '10', '-d5s', f'http://{addr}/']),
                 ('ghz', [GHZ, '--insecure', '--protoset', protoset, '--call', GRPC_UNARY, '-d', '{}',
                          '-c', '100', '--connections', '10', '-z', '5s', addr])]
        rows = {name: {'calls_per_s': [], 'cpu_us': []} for name, _ in tools}
        for _ in range(rounds):
            for name, cmd in tools:
                out, cpu = timed(cmd)
                if name == 'ghz':
                    calls, rate, failed = ghz_figures(out)
                else:
                    calls, rate = requests_of(out), rate_of(out)
                    failed = sum(int(n) for n in re.findall(r'gRPC calls not OK: (\d+)', out))
                if calls == 0:
                    sys.exit(f'compare.py: {name} made no calls against grpc-go:\n' + out[-800:])
                if failed:  # ghz counts the calls its -z cuts off at the end as Unavailable
                    print(f'  note: {name}: {failed} of {calls} calls not OK')
                rows[name]['calls_per_s'].append(rate)
                rows[name]['cpu_us'].append(cpu / calls * 1e6)
        median_table(f'gRPC unary calls against grpc-go -t1, 10 connections x 10 streams (median of {rounds})', rows)
        ratio = lambda key: statistics.median(rows['pace'][key]) / statistics.median(rows['ghz'][key])
        print(f'  pace CPU per call / ghz = {ratio("cpu_us"):.2f}   pace calls/s / ghz = {ratio("calls_per_s"):.2f}')
        grpc_paced(rounds, addr, call, protoset)
    with BuiltInServer() as url, tempfile.TemporaryDirectory() as d:
        proto = os.path.join(d, 'echo.proto')
        with open(proto, 'w') as f:
            f.write(ECHO_PROTO)
        load = ['-t1', '-c10', '--streams', '10', '-d5s', url]
        # The call's message is 12 bytes framed ("hello" in field 1: 7, and
        # gRPC's 5-byte prefix); the POST's body as many.
        tools = [('grpc', [PACE, '--grpc', 'demo.Echo/Say', '--proto', proto, '--data', '{"text": "hello"}'] + load),
                 ('h2', [PACE, '--http2', '-m', 'POST', '--body', '0123456789ab'] + load)]
        rows = {name: {'rps': [], 'cpu_us': []} for name, _ in tools}
        for _ in range(rounds):
            for name, cmd in tools:
                out, cpu = timed(cmd)
                rows[name]['rps'].append(rate_of(out))
                rows[name]['cpu_us'].append(cpu / requests_of(out) * 1e6)
        median_table(f'a unary call vs an HTTP/2 POST of its size, to pace serve -t1 -c10 x 10 (median of {rounds})',
                     rows)
        cost = statistics.median(rows['grpc']['cpu_us']) / statistics.median(rows['h2']['cpu_us'])
        print(f'  CPU per gRPC call / per HTTP/2 request = {cost:.2f}')


RATES = (30000, 50000, 70000, 90000)
RATE_LAG_LIMIT_US = 100  # pace holds a rate when its schedule lag p99 stays within this
RATE_HELD_SHARE = 0.99  # and it achieves at least this share of what its schedule plans
RATE_CONNECTIONS, RATE_SECONDS = 100, 10
# wrk2 connects its connections 5 ms apart and starts each one's schedule at
# its connect, all ending at -d: its plan is short of R by the mean stagger
# (at -c100 -d10s 2.5%), which is no failure to keep it.
WRK2_STAGGER_S = 0.005


def planned_rate(name, rate):
    """What the tool's own schedule asks for over -d (its Requests/sec when
    kept): R for pace, less the stagger for wrk2."""
    if name != 'wrk2':
        return rate
    return rate * (1 - (RATE_CONNECTIONS - 1) * WRK2_STAGGER_S / 2 / RATE_SECONDS)


def wrk2_figures(out):
    """(requests, req/s, corrected p99 us, {kind: count} of errors) from
    wrk2 --latency: the first 99.000% line is the corrected
    ("Recorded Latency") distribution."""
    p99 = re.search(r'^ 99\.000%\s+(\S+)$', out, re.M)
    if not p99:
        raise ValueError('no latency distribution in wrk2 output:\n' + out[-1500:])
    errors = {}
    socket = re.search(r'Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)', out)
    if socket:
        errors.update(zip(('connect', 'read', 'write', 'timeout'), map(int, socket.groups())))
    status = re.search(r'Non-2xx or 3xx responses: (\d+)', out)
    if status:
        errors['non-2xx/3xx'] = int(status.group(1))
    return requests_of(out), rate_of(out), to_us(p99.group(1)), errors


def held_line(name, rows, lag_bound):
    """Which rates a tool held (median achieved >= 99% of what its schedule
    asks for, and for pace median lag p99 <= 100 us), and the highest of them."""
    held, missed = [], []
    for rate in RATES:
        row = {k: statistics.median(v) for k, v in rows[f'{name} {rate}'].items() if v}
        why = []
        if row['share'] < RATE_HELD_SHARE * 100:
            why.append(f'achieved {row["share"]:.1f}% of plan')
        if lag_bound and row['lag_p99'] > RATE_LAG_LIMIT_US:
            why.append(f'lag p99 {row["lag_p99"]:.0f} us')
        if why:
            missed.append(f'{rate} ({", ".join(why)})')
        else:
            held.append(rate)
    rule = (f'lag p99 <= {RATE_LAG_LIMIT_US} us and ' if lag_bound else '') + f'achieved >= {RATE_HELD_SHARE:.0%} of plan'
    best = f'up to {max(held)}/s' if held else 'none of the rates'
    print(f'  {name} held {best} ({rule})' + (f'; missed {", ".join(missed)}' if missed else ''))


class BuiltInServer:
    """`pace serve` (of $PACE) on CPU 0 for the duration of a with block:
    a server that costs less per request than nginx, so that it keeps some
    of its core idle at the rates where nginx's one worker saturates.
    options are more of serve's (e.g. --http3); with --tls or --http3 the
    block gets an https:// URL. self.process.pid is pace serve's own (taskset
    execs it), for its CPU time in /proc."""

    def __init__(self, options=()):
        self.options = list(options)
        self.url = SERVE_URL
        if {'--tls', '--http3'} & set(self.options):
            self.url = f'https://127.0.0.1:{SERVE_PORT}/'

    def __enter__(self):
        try:
            socket.create_connection(('127.0.0.1', SERVE_PORT), timeout=1).close()
            sys.exit(f'compare.py: something else listens on 127.0.0.1:{SERVE_PORT}; set BENCH_SERVE_PORT to a free port')
        except OSError:
            pass  # free, as it should be
        if '--http3' in self.options:
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                udp.bind(('127.0.0.1', SERVE_PORT))
            except OSError:
                sys.exit(f'compare.py: UDP port {SERVE_PORT} is taken; set BENCH_SERVE_PORT to a free port')
            finally:
                udp.close()
        self.process = subprocess.Popen(['taskset', '-c', '0', PACE, 'serve', '-p', str(SERVE_PORT)] + self.options,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(('127.0.0.1', SERVE_PORT), timeout=1).close()
                return self.url
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.1)
        self.process.kill()
        sys.exit(f'compare.py: pace serve did not answer on port {SERVE_PORT} (set BENCH_SERVE_PORT)')

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


def cpu0_ticks():
    """(busy, total) clock ticks of CPU 0 so far, from /proc/stat."""
    with open('/proc/stat') as stat:
        fields = next(line for line in stat if line.startswith('cpu0 ')).split()[1:]
    ticks = [int(f) for f in fields[:8]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def rate_per_core(rounds, url=URL, server='nginx'):
    """Paced runs at rising rates on one core (-t1 -c100 on CPU 1): how far
    up pace keeps its schedule (lag p99 from its JSON) and the rate, next to
    wrk2, and what each request costs in CPU there. Every tool at one rate
    runs before the next rate, so a busy spell of the machine hits them alike.
    Also how busy the server's core was at each rate (CPU 0, /proc/stat):
    near 100%, the server's queue, not the generator, sets the lag; and for
    pace, how much of its sending time its thread worked (`work`: on the CPU
    less its spins between sends, from its JSON), which says how far above
    the rate the core would go."""
    tools = [(name, binary, [binary, '-e']) for name, binary in paces()]
    if have(WRK2):
        tools.append(('wrk2', WRK2, [WRK2, '--latency']))
    rows = {f'{name} {rate}': {'achieved': [], 'share': [], 'lag_p99': [], 'p99': [], 'cpu_us': [], 'server_busy': [],
                               'work': []}
            for name, _, _ in tools for rate in RATES}
    errors = {}  # tool -> {kind: count} over its runs: what it counted as failed or unsent
    warned = {}  # pace's warnings (codes) -> in how many of its runs
    pace_runs = 0
    load = [open('/proc/loadavg').read().split()[0]]
    for _ in range(rounds):
        for rate in RATES:
            for name, binary, cmd in tools:
                before = cpu0_ticks()
                out, cpu = timed(cmd[:1] + ['-t1', f'-c{RATE_CONNECTIONS}', f'-d{RATE_SECONDS}s', f'-R{rate}'] + cmd[1:] + [url])
                busy, total = (a - b for a, b in zip(cpu0_ticks(), before))
                row = rows[f'{name} {rate}']
                row['server_busy'].append(busy / max(total, 1) * 100)
                if name == 'wrk2':
                    requests, achieved, p99, failed = wrk2_figures(out)
                else:
                    requests, achieved, failed, report = pace_figures(out)
                    row['lag_p99'].append(report['schedule_lag']['percentiles_us']['99'])
                    work = report.get('generator', {}).get('busiest_thread_work_share')
                    if work is not None:  # not in a base older than the figure
                        row['work'].append(work * 100)
                    p99 = report['latency']['corrected']['percentiles_us']['99']
                    if name == 'pace':
                        pace_runs += 1
                        for code in {w.get('code', '?') for w in report.get('warnings', [])}:
                            warned[code] = warned.get(code, 0) + 1
                for kind, count in failed.items():
                    errors.setdefault(name, {}).setdefault(kind, 0)
                    errors[name][kind] += count
                row['achieved'].append(achieved)
                row['share'].append(achieved / planned_rate(name, rate) * 100)
                row['p99'].append(p99)
                row['cpu_us'].append(cpu / max(requests, 1) * 1e6)
    load.append(open('/proc/loadavg').read().split()[0])
    ordered = {f'{name} {rate}': rows[f'{name} {rate}'] for rate in RATES for name, _, _ in tools}
    median_table(f'rate per core against {server}: -R {"/".join(str(r) for r in RATES)} -t1 -c{RATE_CONNECTIONS} -d{RATE_SECONDS}s, '
                 f'share = achieved / planned %, lag_p99 and p99 (corrected) in us, server_busy = CPU 0 busy %, '
                 f'work = pace\'s thread working % (median of {rounds})',
                 ordered)
    for name, _, _ in tools:
        held_line(name, rows, name != 'wrk2')
    if have(WRK2):
        for name, _ in paces():
            ratios = (statistics.median(rows[f'{name} {r}']['cpu_us']) / statistics.median(rows[f'wrk2 {r}']['cpu_us'])
                      for r in RATES)
            print(f'  {name} CPU per request / wrk2 at {"/".join(str(r) for r in RATES)}: '
                  + ' '.join(f'{x:.2f}' for x in ratios))
    for name, counts in errors.items():
        if any(counts.values()):
            print(f'  note: {name} over the rate runs: ' + ', '.join(f'{kind} {n}' for kind, n in counts.items() if n))
    if warned:
        print(f'  note: pace warned: ' + ', '.join(f'{code} in {n} of {pace_runs} runs' for code, n in sorted(warned.items()))
              + ' (generator_cpu: its message says whether pace was busy, starved by other processes, or late in bursts)')
    print(f'  note: 1-minute load average {load[0]} before, {load[1]} after (2 cores: nginx and the generator '
          f'take up to 2; more means something else ran)')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--only', default=','.join(PARTS))
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit('compare.py: --rounds must be at least 1')
    parts = args.only.split(',')
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        sys.exit(f'compare.py: unknown part {",".join(unknown)} (parts: {",".join(PARTS)})')
    if not have(PACE):
        sys.exit(f'compare.py: no pace binary at {PACE}: run cargo build --release (or set PACE)')
    if PACE_BASE and not have(PACE_BASE):
        sys.exit(f'compare.py: no pace binary at PACE_BASE={PACE_BASE}')
    if 'grpc' in parts and not (have(GHZ) and have(GRPC_SERVER)):
        print(f'grpc: skipped, no ghz at {GHZ} or no grpc-go server at {GRPC_SERVER} '
              '(bench/peers.sh ghz grpc-server, or set GHZ and GRPC_SERVER)')
        parts.remove('grpc')
    for part in ('h2', 'h2-serve'):
        if part in parts and not have(H2LOAD):
            print(f'{part}: skipped, no h2load (apt-get install nghttp2-client, or set H2LOAD)')
            parts.remove(part)
    if not parts:
        return
    h2_base = bool(PACE_BASE) and {'h2', 'h2-serve'} & set(parts) and speaks_http2(PACE_BASE)
    if PACE_BASE and {'h2', 'h2-serve'} & set(parts) and not h2_base:
        print(f'note: {PACE_BASE} (PACE_BASE) has no --http2: h2 without base')
    h3_base = bool(PACE_BASE) and 'h3' in parts and speaks_http3(PACE_BASE)
    if PACE_BASE and 'h3' in parts and not h3_base:
        print(f'note: {PACE_BASE} (PACE_BASE) has no --http3: h3 without base')
    missing = missing_tools(parts)
    if missing:
        sys.exit('compare.py: missing ' + '; '.join(f'{what} ({how})' for what, how in missing))
    if {'paced', 'wide', 'rate', 'rate-serve'} & set(parts):
        if not have(WRK2):
            print(f'note: no wrk2 at {WRK2} (bench/peers.sh wrk2, or set WRK2): paced/wide/rate without wrk2')
    if {'paced', 'wire'} & set(parts) and not have(OHA):
        print(f'note: no oha at {OHA} (bench/peers.sh oha, or set OHA): paced/wire without oha')
    up = subprocess.run(['bash', os.path.join(HERE, 'nginx-up')], capture_output=True, text=True)
    if up.returncode != 0:
        sys.exit(f'compare.py: nginx did not start: {up.stderr.strip()}')
    try:
        if 'closed' in parts:
            closed(args.rounds)
        if 'one' in parts:
            closed(args.rounds, conns=1)
        if 'lua' in parts:
            lua(args.rounds)
        if 'static' in parts:
            static_cost(args.rounds)
        if 'paced' in parts:
            paced(args.rounds, 1, 50, 'paced')
        if 'wide' in parts:
            paced(args.rounds, 2, 1000, 'wide')
        if 'plans' in parts:
            plans(args.rounds)
        if 'shards' in parts:
            shards(args.rounds)
        if 'wire' in parts:
            wire(args.rounds)
        if 'h2' in parts:
            h2(args.rounds, h2_base)
        if 'rate' in parts:
            rate_per_core(args.rounds)
        if 'rate-serve' in parts:
            with BuiltInServer() as url:
                rate_per_core(args.rounds, url, 'pace serve')
        if 'h2-serve' in parts:
            with BuiltInServer() as url:
                h2_serve(args.rounds, h2_base, url)
        if 'h3' in parts:
            h3(args.rounds, h3_base)
        if 'grpc' in parts:
            grpc_part(args.rounds)
    finally:
        subprocess.run(['bash', os.path.join(HERE, 'nginx-up'), 'stop'])


if __name__ == '__main__':
    main()
