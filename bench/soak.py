#!/usr/bin/env python3
"""Soak: a long paced run against the built-in server, watching pace's
memory and open files.

Runs `pace serve` on CPU 0 and `pace -R RATE -d DURATION` on CPU 1, samples
the generator's resident memory (VmRSS) and open descriptors every
INTERVAL seconds, and prints them with the report's summary. Both should be
flat after the first seconds: anything that grows with the run is a leak.

usage: bench/soak.py [--rate 20000] [--duration 600] [--interval 10]
                     [--connections 100]
"""
import argparse, os, re, shutil, socket, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACE = os.environ.get('PACE', os.path.join(ROOT, 'target', 'release', 'pace'))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def sample(pid):
    """(VmRSS in KiB, open descriptors) of a running process."""
    with open(f'/proc/{pid}/status') as f:
        rss = int(re.search(r'^VmRSS:\s+(\d+) kB', f.read(), re.M).group(1))
    return rss, len(os.listdir(f'/proc/{pid}/fd'))


def wait_for(port, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(('127.0.0.1', port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f'the built-in server did not listen on port {port}')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rate', type=int, default=20000)
    ap.add_argument('--duration', type=int, default=600, help='seconds')
    ap.add_argument('--interval', type=int, default=10, help='seconds between samples')
    ap.add_argument('--connections', type=int, default=100)
    args = ap.parse_args()
    if not (os.path.exists(PACE) and os.access(PACE, os.X_OK)):
        sys.exit(f'no pace binary at {PACE}: run cargo build --release (or set PACE)')
    if not shutil.which('taskset'):
        sys.exit('taskset is missing (Debian package util-linux)')
    port = free_port()
    server = subprocess.Popen(['taskset', '-c', '0', PACE, 'serve', '--port', str(port)],
                              stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        cmd = ['taskset', '-c', '1', PACE, '-t1', f'-c{args.connections}', f'-d{args.duration}s',
               f'-R{args.rate}', f'http://127.0.0.1:{port}/']
        print(' '.join(cmd[3:]), flush=True)
        pace = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        samples = []
        started = time.time()
        print(f'{"t (s)":>6} {"RSS (KiB)":>10} {"fds":>5}', flush=True)
        while pace.poll() is None:
            time.sleep(args.interval)
            try:
                rss, fds = sample(pace.pid)
            except (FileNotFoundError, ProcessLookupError, AttributeError):
                break
            samples.append((time.time() - started, rss, fds))
            print(f'{samples[-1][0]:6.0f} {rss:10d} {fds:5d}', flush=True)
        out, _ = pace.communicate()
        print(out)
        settled = [s for s in samples if s[0] >= 30] or samples
        if settled:
            rss = [s[1] for s in settled]
            fds = [s[2] for s in settled]
            print(f'after 30 s: RSS {min(rss)}..{max(rss)} KiB (growth {max(rss) - rss[0]} KiB), '
                  f'fds {min(fds)}..{max(fds)}')
    finally:
        server.terminate()
        server.wait()


if __name__ == '__main__':
    main()
