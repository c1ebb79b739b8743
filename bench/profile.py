#!/usr/bin/env python3
"""Where a request's CPU goes, per case: the profile docs/profile.md reports.

For each case the load generator runs pinned to CPU 1 (nginx, one worker,
on CPU 0, started by bench/nginx-up) and is measured three ways:

- CPU 1's time split by /proc/stat over the run (user, system, softirq,
  idle), in microseconds per request: on loopback, a send also runs the
  receiving side of its packet (the server's TCP receive) in softirq on
  the sender's CPU, so softirq is part of what a request costs there.
  /proc/stat samples CPU 1 at each timer tick, so a run that wakes in
  step with the tick can read as idle (a plan at 10,000/s wakes every
  100 us, which divides the 4 ms tick): then trust process, not busy;
- the generator's own CPU time per request (process: user + system of
  /usr/bin/time, which the scheduler counts exactly, softirq that ran in
  its context included) and its context switches per request;
- with --syscalls, its system calls per request (strace -c -f, in a run of
  its own: strace slows every call, so its run's figures are not used).

Cases: closed (-t1 -c50), one (-t1 -c1), paced (-R10000 -t1 -c50) and
rate (-R70000 -t1 -c100), for pace and the peer each is compared with
(wrk for the closed loop, wrk2 for the paced ones, if built: see
bench/peers.sh). The medians of --rounds rounds are printed.

usage: profile.py [--rounds N] [--only closed,one,paced,rate] [--syscalls]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PACE = os.environ.get('PACE', os.path.join(ROOT, 'target', 'release', 'pace'))
WRK = shutil.which('wrk')
WRK2 = os.environ.get('WRK2', os.path.join(HERE, 'peers', 'wrk2', 'wrk'))
URL = 'http://127.0.0.1:{}/index.html'.format(os.environ.get('BENCH_PORT', '18080'))
SECONDS = 5

CASES = {
    'closed': (['-t1', '-c50'], 'wrk'),
    'one': (['-t1', '-c1'], 'wrk'),
    'paced': (['-t1', '-c50', '-R10000'], 'wrk2'),
    'rate': (['-t1', '-c100', '-R70000'], 'wrk2'),
}
FIELDS = ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal']


def cpu1_ticks():
    with open('/proc/stat') as f:
        for line in f:
            if line.startswith('cpu1 '):
                return dict(zip(FIELDS, map(int, line.split()[1:9])))
    sys.exit('profile.py: no cpu1 in /proc/stat (it needs two CPUs)')


def requests_of(tool, out):
    """Requests the tool reports completing."""
    if tool == 'pace':
        return json.loads(out)['requests']
    match = re.search(r'(\d+) requests in', out)
    return int(match.group(1)) if match else 0


def command(tool, args):
    duration = f'-d{SECONDS}s'
    if tool == 'pace':
        return [PACE, duration, '-e', '--no-progress'] + args + [URL]
    return [WRK if tool == 'wrk' else WRK2, duration] + args + [URL]


def measure(tool, args):
    """One run: per request, CPU 1's microseconds by kind and the
    generator's context switches."""
    ticks_per_s = os.sysconf('SC_CLK_TCK')
    with tempfile.NamedTemporaryFile('r') as t:
        before = cpu1_ticks()
        out = subprocess.run(['/usr/bin/time', '-f', '%c %w %U %S', '-o', t.name, 'taskset', '-c', '1']
                             + command(tool, args), capture_output=True, text=True, check=True).stdout
        after = cpu1_ticks()
        involuntary, voluntary, user_s, system_s = t.read().split()[-4:]
        involuntary, voluntary = int(involuntary), int(voluntary)
    n = max(requests_of(tool, out), 1)
    us = {k: (after[k] - before[k]) * 1e6 / ticks_per_s / n for k in ('user', 'system', 'softirq', 'idle')}
    us['busy'] = us['user'] + us['system'] + us['softirq']
    us['process'] = (float(user_s) + float(system_s)) * 1e6 / n
    us['switches'] = (involuntary + voluntary) / n
    us['rate'] = n / SECONDS
    return us


def syscalls(tool, args):
    """System calls per request, the most frequent first."""
    with tempfile.NamedTemporaryFile('r') as t:
        out = subprocess.run(['taskset', '-c', '1', 'strace', '-c', '-f', '-o', t.name]
                             + command(tool, args), capture_output=True, text=True).stdout
        table = t.read()
    n = max(requests_of(tool, out), 1)
    calls = {}
    for line in table.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] not in ('total',):
            calls[parts[-1]] = int(parts[3])
    top = sorted(calls.items(), key=lambda kv: -kv[1])[:4]
    return ', '.join(f'{name} {count / n:.2f}' for name, count in top)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--only', default=','.join(CASES))
    parser.add_argument('--syscalls', action='store_true')
    opts = parser.parse_args()
    up = subprocess.run(['bash', os.path.join(HERE, 'nginx-up')], capture_output=True, text=True)
    if up.returncode != 0:
        sys.exit(f'profile.py: nginx-up failed: {up.stderr.strip()}')
    try:
        for case in opts.only.split(','):
            args, peer = CASES[case]
            tools = ['pace'] + [peer] if (peer == 'wrk' and WRK) or os.path.exists(WRK2) else ['pace']
            print(f'== {case}: {" ".join(args)} -d{SECONDS}s (median of {opts.rounds}; us per request)')
            for tool in tools:
                runs = [measure(tool, args) for _ in range(opts.rounds)]
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                line = (f'  {tool:5} rate={med["rate"]:.0f}/s process={med["process"]:.2f} '
                        f'busy={med["busy"]:.2f} user={med["user"]:.2f} '
                        f'system={med["system"]:.2f} softirq={med["softirq"]:.2f} idle={med["idle"]:.2f} '
                        f'switches={med["switches"]:.3f}')
                if opts.syscalls and shutil.which('strace'):
                    line += f'  syscalls: {syscalls(tool, args)}'
                print(line, flush=True)
    finally:
        subprocess.run(['bash', os.path.join(HERE, 'nginx-up'), 'stop'])


if __name__ == '__main__':
    main()
