#!/usr/bin/env python3
"""Would an io_uring backend make a closed-loop request cheaper? (issue 20,
docs/profile.md). Runs wrk, pace and this probe's closed loop, which sends
GET /index.html on each connection again as soon as its response is in,
over epoll (as pace does: edge-triggered, one send and one recv per
request; once more with pace's stamps: a clock read at each send and
recvmsg with the kernel's receive stamp) and over io_uring (fixed files,
single issuer with deferred task running, multishot receive into a
provided buffer ring; once more stamped, by a multishot recvmsg), once
waiting for one completion per kernel entry and once for 25 (which holds
responses back until 25 are in). -t1 -cC for 5 s each, the generator on CPU 1,
bench/nginx-up's nginx on CPU 0, the tools alternated round by round;
prints medians of CPU time (user + sys, /usr/bin/time) per request and
requests/s, and each over wrk.

usage: bench/uring-probe/run.py [--rounds N] [--conns C]
(build first: cd bench/uring-probe && cargo build --release)"""
import argparse, os, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(HERE, 'target', 'release', 'uring-probe')
PACE = os.environ.get('PACE', os.path.join(ROOT, 'target', 'release', 'pace'))
PORT = int(os.environ.get('BENCH_PORT', '18080'))
URL = f'http://127.0.0.1:{PORT}/index.html'
URING = ['uring', '--fixed', '--defer', '--multishot']


def run(cmd):
    """(requests, requests/s, CPU us per request) of cmd on CPU 1."""
    with tempfile.NamedTemporaryFile('r') as t:
        out = subprocess.run(['/usr/bin/time', '-f', '%U %S', '-o', t.name, 'taskset', '-c', '1'] + cmd,
                             capture_output=True, text=True, check=True).stdout
        cpu = sum(map(float, t.read().split()[-2:]))
    m = re.search(r'(\d+) requests in', out) or re.search(r'responses=(\d+)', out)
    n = int(m.group(1))
    return n, n / 5, cpu / n * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--conns', type=int, default=50)
    args = ap.parse_args()
    for binary, how in ((PROBE, 'cd bench/uring-probe && cargo build --release'), (PACE, 'cargo build --release')):
        if not os.access(binary, os.X_OK):
            sys.exit(f'run.py: no {binary} ({how})')
    c = str(args.conns)
    probe = lambda *mode: [PROBE, *mode, '-c', c, '-d', '5', '-p', str(PORT)]
    tools = {
        'wrk': ['wrk', '-t1', f'-c{c}', '-d5s', URL],
        'pace': [PACE, '-t1', f'-c{c}', '-d5s', URL],
        'epoll': probe('epoll'),
        'epoll stamped': probe('epoll', '--stamp'),
        'uring': probe(*URING),
        'uring stamped': probe(*URING, '--stamp'),
        'uring wait 25': probe(*URING, '--wait', '25'),
    }
    subprocess.run(['bash', os.path.join(ROOT, 'bench', 'nginx-up')], check=True)
    rows = {name: [] for name in tools}
    try:
        for _ in range(args.rounds):
            for name, cmd in tools.items():
                rows[name].append(run(cmd))
    finally:
        subprocess.run(['bash', os.path.join(ROOT, 'bench', 'nginx-up'), 'stop'])
    wrk_cpu = statistics.median(r[2] for r in rows['wrk'])
    print(f'closed loop -t1 -c{c} -d5s, median of {args.rounds} (CPU us per request, spread over rounds)')
    for name, samples in rows.items():
        cpu = [s[2] for s in samples]
        rps = statistics.median(s[1] for s in samples)
        print(f'  {name:14} cpu_us={statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f})  '
              f'rps={rps:.0f}  cpu/wrk={statistics.median(cpu) / wrk_cpu:.2f}')


if __name__ == '__main__':
    main()
