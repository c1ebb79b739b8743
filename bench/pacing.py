#!/usr/bin/env python3
"""Measure, from outside, how evenly a load generator paces requests.

Captures request packets on loopback to PORT with tcpdump while COMMAND runs,
then compares the arrival times with a perfectly even grid at RATE req/s:
  achieved   requests/s over the steady middle of the run
  grid_p50/p99/p999  |t_k - (a + b k)| for the least-squares even grid (us): jitter
  win1ms_p99  99th percentile of requests per 1 ms window / expected per window
usage: pacing.py PORT RATE SKIP_S -- COMMAND...
SKIP_S seconds at the start and 1 s at the end are left out (warm-up, tail).
Needs tcpdump (and the right to capture: root or CAP_NET_RAW) and numpy.
From ../shared/bench/pacing.py.
"""
import subprocess, sys, time, signal, os
import numpy as np

port, rate, skip = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
cmd = sys.argv[sys.argv.index('--') + 1:]
pcap = f'/tmp/pacing-{os.getpid()}.pcap'
cap = subprocess.Popen(['tcpdump', '-i', 'lo', '-n', '-B', '65536', '-s', '96', '-w', pcap,
                        f'tcp dst port {port} and (tcp[tcpflags] & tcp-push != 0)'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    # Capturing once tcpdump says so ("tcpdump: listening on lo, ...").
    for line in cap.stderr:
        if 'listening on' in line:
            break
    else:
        sys.exit(f'tcpdump did not start capturing (exit {cap.wait()})')
    out = subprocess.run(cmd, capture_output=True, text=True)
    time.sleep(0.5)
    cap.send_signal(signal.SIGINT)
    cap.wait()
finally:
    # However this ends (COMMAND not found, Ctrl-C), tcpdump does not outlive it.
    if cap.poll() is None:
        cap.kill()
        cap.wait()
lines = subprocess.run(['tcpdump', '-r', pcap, '-n', '-tt', '-q'], capture_output=True,
                       text=True).stdout.splitlines()
os.unlink(pcap)
ts = np.array(sorted(float(l.split()[0]) for l in lines if ' tcp ' in l and not l.endswith('tcp 0')))
if len(ts) < 100:
    print('too few packets', len(ts)); print(out.stdout[-2000:]); sys.exit(1)
start, end = ts[0] + skip, ts[-1] - 1.0
s = ts[(ts >= start) & (ts <= end)]
achieved = (len(s) - 1) / (s[-1] - s[0])
k = np.arange(len(s))
b, a = np.polyfit(k, s - s[0], 1)          # fitted spacing: separates rate error from jitter
d = s - s[0] - (a + b * k)
d -= np.median(d)
dev = np.abs(d) * 1e6
w = np.bincount(((s - s[0]) * 1000).astype(int))
exp = rate / 1000.0
print(f'packets={len(ts)} steady={len(s)} achieved={achieved:.1f}/s target={rate:.0f}/s '
      f'grid_p50={np.percentile(dev,50):.0f}us grid_p99={np.percentile(dev,99):.0f}us '
      f'grid_p999={np.percentile(dev,99.9):.0f}us win1ms_p99={np.percentile(w,99)/exp:.2f} '
      f'win1ms_max={w.max()/exp:.2f}')
