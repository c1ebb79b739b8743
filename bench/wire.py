#!/usr/bin/env python3
"""Measure, from outside, the latency a load generator should report.

Captures the TCP traffic on loopback to and from PORT with tcpdump while
COMMAND runs, and for each request takes the gap seen on the wire: from the
first packet of the request (client to server, with data) to the first
packet of its response (server to client, with data) on the same TCP
connection. A closed-loop run (each connection waits for its response before
it sends again) alternates requests and responses on every connection, so
they pair up in order; retransmitted segments (data the sequence numbers say
was seen before) are left out. Prints one line:

  pairs=N  wire_p50=..us wire_p90=..us wire_p99=..us wire_max=..us
  turn_p50=..us turn_p99=..us  drops=N

(on one line). turn_ is the client's turnaround on the wire: from the last
segment of a response to the first of the next request on its connection,
what the client takes between a response and its next request (its
wake-up, reading, parsing, recording, deciding); it is left out when no
connection sent again after a response.

usage: wire.py PORT [--skip S] [--tcpdump-cpu N] [--timeout S] -- COMMAND...
--skip S leaves out requests sent in the first S seconds after the first
one (default 0: all); --tcpdump-cpu N runs tcpdump on CPU N (taskset),
away from the load generator's; --timeout S kills COMMAND after S seconds
(default 120). COMMAND's output comes first, then the line, on a line of
its own. drops is what tcpdump says the kernel dropped (must be 0).

Exits 1 with one line if tcpdump is missing or cannot capture (it needs
root or CAP_NET_RAW), if COMMAND fails, or if the capture holds no pairs.
Needs no numpy: the pcap is read with struct. tcpdump runs in immediate
mode with nanosecond timestamps (and adapter_unsynced if lo offers it) and
is stopped however wire.py ends.
"""
import os, shutil, signal, struct, subprocess, sys, tempfile


def die(line):
    sys.exit(f'wire.py: {line}')


def tcpdump_path():
    return shutil.which('tcpdump') or next(
        (p for p in ('/usr/sbin/tcpdump', '/usr/bin/tcpdump') if os.access(p, os.X_OK)), None)


def capture_options(tcpdump):
    """Nanosecond timestamps, and the adapter's own clock if lo has one."""
    types = subprocess.run([tcpdump, '-J', '-i', 'lo'], capture_output=True, text=True).stdout
    options = ['--time-stamp-precision=nano']
    if 'adapter_unsynced' in types:
        options += ['-j', 'adapter_unsynced']
    return options


def packets(path):
    """(time s, src port, dst port, seq, payload bytes, SYN) of each TCP packet
    of a pcap file (Ethernet or Linux cooked link, IPv4 or IPv6)."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = data[:4]
    order = {b'\xd4\xc3\xb2\xa1': '<', b'\x4d\x3c\xb2\xa1': '<',
             b'\xa1\xb2\xc3\xd4': '>', b'\xa1\xb2\x3c\x4d': '>'}.get(magic)
    if order is None:
        die(f'{path} is not a pcap file')
    frac = 1e-9 if magic in (b'\x4d\x3c\xb2\xa1', b'\xa1\xb2\x3c\x4d') else 1e-6
    linktype = struct.unpack(order + 'I', data[20:24])[0] & 0x0fffffff
    link_len = {1: 14, 113: 16, 276: 20}.get(linktype)  # Ethernet, SLL, SLL2
    if link_len is None:
        die(f'link type {linktype} of the capture is not Ethernet or Linux cooked')
    record = struct.Struct(order + 'IIII')
    at = 24
    while at + 16 <= len(data):
        sec, sub, incl, _ = record.unpack_from(data, at)
        at += 16
        pkt = data[at:at + incl]
        at += incl
        ip = link_len
        if len(pkt) < ip + 1:
            continue
        version = pkt[ip] >> 4
        if version == 4:
            ihl = (pkt[ip] & 0x0f) * 4
            total = struct.unpack_from('>H', pkt, ip + 2)[0]
            if pkt[ip + 9] != 6:
                continue
            tcp, ip_payload = ip + ihl, total - ihl
        elif version == 6:
            if pkt[ip + 6] != 6:  # no extension headers on loopback TCP
                continue
            tcp, ip_payload = ip + 40, struct.unpack_from('>H', pkt, ip + 4)[0]
        else:
            continue
        if len(pkt) < tcp + 13:
            continue
        sport, dport, seq = struct.unpack_from('>HHI', pkt, tcp)
        payload = ip_payload - (pkt[tcp + 12] >> 4) * 4
        yield sec + sub * frac, sport, dport, seq, payload, pkt[tcp + 13] & 0x02


def gaps(path, port, skip):
    """Request-to-response gaps (s), in the order of the requests, and the
    client's turnarounds (s): from the last segment of a response to the
    first of the next request on the same connection, what the client
    takes between reading one response and sending again."""
    waiting = {}   # client port -> time of its outstanding request
    answered = {}  # client port -> time of the latest segment of its last response
    seen = {}      # (src port, dst port) -> end of the data seen so far (seq)
    first = None
    out, turns = [], []
    for t, sport, dport, seq, payload, syn in packets(path):
        flow = (sport, dport)
        client = sport if dport == port else dport
        if syn:  # a new connection (perhaps from a port used before)
            seen.pop(flow, None)
            waiting.pop(client, None)
            answered.pop(client, None)
        if payload <= 0:
            continue
        end = (seq + payload) & 0xffffffff
        if flow in seen:
            ahead = (end - seen[flow]) & 0xffffffff  # modulo 2**32: sequence numbers wrap
            if ahead == 0 or ahead >= 1 << 31:
                continue  # ends at or before data seen before: a retransmission
        seen[flow] = end
        if dport == port:  # a request segment
            if sport not in waiting:
                waiting[sport] = t
                first = t if first is None else first
                last = answered.pop(sport, None)
                if last is not None and t >= first + skip:
                    turns.append(t - last)
        elif sport == port:  # a response segment
            if dport in waiting:  # its first
                sent = waiting.pop(dport)
                if sent >= first + skip:
                    out.append(t - sent)
            answered[dport] = t
    return out, turns


def percentile(sorted_values, p):
    """Nearest rank: the smallest value with at least p% at or below it."""
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def main():
    args = sys.argv[1:]
    if '--' not in args:
        die('usage: wire.py PORT [--skip S] [--tcpdump-cpu N] [--timeout S] -- COMMAND...')
    cut = args.index('--')
    options, cmd = args[:cut], args[cut + 1:]
    try:
        port = int(options[0])
        skip = float(options[options.index('--skip') + 1]) if '--skip' in options else 0.0
        cpu = int(options[options.index('--tcpdump-cpu') + 1]) if '--tcpdump-cpu' in options else None
        timeout = float(options[options.index('--timeout') + 1]) if '--timeout' in options else 120.0
    except (IndexError, ValueError):
        die('usage: wire.py PORT [--skip S] [--tcpdump-cpu N] [--timeout S] -- COMMAND...')
    if not cmd:
        die('no COMMAND after --')
    tcpdump = tcpdump_path()
    if not tcpdump:
        die('missing tcpdump (apt-get install tcpdump)')
    pin = []
    if cpu is not None:
        if not shutil.which('taskset'):
            die('missing taskset (apt-get install util-linux)')
        pin = ['taskset', '-c', str(cpu)]

    fd, pcap = tempfile.mkstemp(prefix='wire-', suffix='.pcap')
    os.close(fd)
    cap = None
    try:
        # Headers only (-s 128); a 64 MiB buffer (-B) so no packet is dropped;
        # --immediate-mode, else libpcap takes packets in TPACKET_V3 blocks and
        # the last block of a run can still be in the kernel when tcpdump stops
        # (seen here: the last ~50 ms of a run missing, with 0 reported dropped).
        cap = subprocess.Popen(pin + [tcpdump, '-i', 'lo', '-n', '-B', '65536', '-s', '128', '--immediate-mode',
                                      '-w', pcap]
                               + capture_options(tcpdump) + [f'tcp port {port}'],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        said = ''
        for said in cap.stderr:  # capturing once tcpdump says "listening on lo, ..."
            if 'listening on' in said:
                break
        else:
            die(f'tcpdump cannot capture on lo (exit {cap.wait()}; it needs root or CAP_NET_RAW): {said.strip()}')
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            die(f'cannot run {cmd[0]}: not found')
        except subprocess.TimeoutExpired:
            die(f'{os.path.basename(cmd[0])} still ran after {timeout:g} s: killed')
        cap.send_signal(signal.SIGINT)
        stats = cap.communicate(timeout=30)[1]
        cap = None
        if run.returncode != 0:
            tail = ''.join(f': {l}' for l in run.stderr.strip().splitlines()[-1:])
            die(f'{os.path.basename(cmd[0])} exited {run.returncode}{tail}')
        sys.stdout.write(run.stdout if run.stdout.endswith('\n') or not run.stdout else run.stdout + '\n')
        dropped = next((int(l.split()[0]) for l in stats.splitlines() if 'dropped by kernel' in l), 0)
        values, turns = (sorted(v) for v in gaps(pcap, port, skip))
    finally:
        if cap is not None:
            cap.kill()
            cap.wait()
        os.unlink(pcap)
    if not values:
        die(f'no request/response pairs on port {port} in the capture')
    us = [v * 1e6 for v in values]
    cells = '  '.join(f'wire_p{p}={percentile(us, p):.1f}us' for p in (50, 90, 99))
    turn_us = [v * 1e6 for v in turns]
    turn_cells = ''.join(f'  turn_p{p}={percentile(turn_us, p):.1f}us' for p in (50, 99)) if turns else ''
    print(f'pairs={len(us)}  {cells}  wire_max={us[-1]:.1f}us{turn_cells}  drops={dropped}', flush=True)


if __name__ == '__main__':
    main()
