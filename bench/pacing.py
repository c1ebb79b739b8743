#!/usr/bin/env python3
"""Measure, from outside, how evenly a load generator paces requests.

Captures request packets on loopback to PORT with tcpdump while COMMAND runs,
then compares the arrival times with a perfectly even grid at RATE req/s:
  achieved   requests/s over the steady middle of the run
  grid_p50/p99/p999  |t_k - (a + b k)| for the least-squares even grid (us): jitter
  win1ms_p99  99th percentile of requests per 1 ms window / expected per window
usage: pacing.py [--h2 | --udp MIN MAX ONE MORE] PORT RATE SKIP_S -- COMMAND...
SKIP_S seconds at the start and 1 s at the end are left out (warm-up, tail).
Needs tcpdump (and the right to capture: root or CAP_NET_RAW) and numpy.
From ../shared/bench/pacing.py.

A request is a client-to-server segment with PSH set (HTTP/1.1: one write
per request). With --h2 (HTTP/2 without TLS: h2c) a request is a HEADERS
frame instead: every client-to-server byte is captured and each connection's
stream of frames is put together again from its segments, so the preface,
SETTINGS, SETTINGS and PING acknowledgements and WINDOW_UPDATE are not taken
for requests, and a segment carrying n HEADERS frames counts n requests at
its time (a frame's time is that of the segment holding its first byte).
The line then says, instead of packets=, requests= (HEADERS frames),
segments= (client segments with data), per_segment= (requests per segment
that carries any), the other frames (settings=, window_update=, other=) and
lost= (connections left out: begun before the capture, or a gap in it).

With --udp MIN MAX ONE MORE (HTTP/3: QUIC over UDP, encrypted) requests
are client-to-server datagrams whose UDP payload is MIN to MAX bytes: QUIC
hides the frames, so the sizes tell them apart (a GET of `/` to `pace serve
--http3` is a 53-61 byte packet, one that carries only acknowledgements
31-37, the handshake's and path MTU probes 1200 and more). A packet of ONE
bytes carries one request, and each MORE bytes beyond carry one more (a
turn that sends two requests on a connection packs them together): it
counts that many requests at its time.
"""
import collections, struct, subprocess, sys, time, signal, os
import numpy as np

PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'


def segments(path):
    """(time s, src port, dst port, seq, SYN, payload) of each TCP packet of a
    pcap file (Ethernet or Linux cooked link, IPv4 or IPv6); payload is None
    if the capture cut the packet short."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        return
    order = {b'\xd4\xc3\xb2\xa1': '<', b'\xa1\xb2\xc3\xd4': '>'}.get(data[:4])
    if order is None:
        sys.exit(f'pacing.py: {path} is not a microsecond pcap file')
    link = {1: 14, 113: 16, 276: 20}.get(struct.unpack(order + 'I', data[20:24])[0] & 0x0fffffff)
    if link is None:
        sys.exit('pacing.py: the capture\'s link type is not Ethernet or Linux cooked')
    record = struct.Struct(order + 'IIII')
    at = 24
    while at + 16 <= len(data):
        sec, usec, incl, orig = record.unpack_from(data, at)
        pkt = data[at + 16:at + 16 + incl]
        at += 16 + incl
        ip = link
        if len(pkt) < ip + 40:
            continue
        if pkt[ip] >> 4 == 4 and pkt[ip + 9] == 6:
            tcp, end = ip + (pkt[ip] & 0x0f) * 4, ip + struct.unpack_from('>H', pkt, ip + 2)[0]
        elif pkt[ip] >> 4 == 6 and pkt[ip + 6] == 6:  # no extension headers on loopback TCP
            tcp, end = ip + 40, ip + 40 + struct.unpack_from('>H', pkt, ip + 4)[0]
        else:
            continue
        sport, dport, seq = struct.unpack_from('>HHI', pkt, tcp)
        start = tcp + (pkt[tcp + 12] >> 4) * 4
        payload = pkt[start:end] if incl == orig else None
        yield sec + usec * 1e-6, sport, dport, seq, pkt[tcp + 13] & 0x02, payload


def h2_requests(path, port):
    """Times of the HEADERS frames sent to PORT; counts of the frames by type;
    client segments with data; those of them that carry a HEADERS frame's
    start; connections given up."""
    conns = {}  # client port -> [next seq, unparsed bytes, [(offset in them, segment number)], preface seen]
    times, frames, carrying = [], collections.Counter(), set()
    stamps = []  # time of each client segment with data, by number
    lost = 0
    for t, sport, dport, seq, syn, payload in segments(path):
        if dport != port:
            continue
        if syn:
            conns[sport] = [(seq + 1) & 0xffffffff, b'', [], False]
            continue
        c = conns.get(sport)
        if c is None or payload == b'':
            continue
        behind = (c[0] - seq) & 0xffffffff
        if payload is not None and behind and behind < 1 << 31:
            if behind >= len(payload):  # a retransmission of data seen before
                continue
            payload = payload[behind:]
        elif payload is None or behind:  # cut short, or data missing in the capture
            lost += 1
            del conns[sport]
            continue
        c[0] = (c[0] + len(payload)) & 0xffffffff
        c[2].append((len(c[1]), len(stamps)))
        stamps.append(t)
        buf, at = c[1] + payload, 0
        if not c[3]:
            if len(buf) < len(PREFACE):
                c[1] = buf
                continue
            if not buf.startswith(PREFACE):  # not h2c
                lost += 1
                del conns[sport]
                continue
            c[3], at = True, len(PREFACE)
        marks = c[2]
        while len(buf) - at >= 9:
            length = int.from_bytes(buf[at:at + 3], 'big')
            if len(buf) - at < 9 + length:
                break
            kind = buf[at + 3]
            frames[kind] += 1
            if kind == 1:  # HEADERS: a request, at the time of the segment with its first byte
                segment = next(n for offset, n in reversed(marks) if offset <= at)
                carrying.add(segment)
                times.append(stamps[segment])
            at += 9 + length
        first = max(i for i, (offset, _) in enumerate(marks) if offset <= at) if at < len(buf) else len(marks)
        c[1] = buf[at:]
        c[2] = [(max(offset - at, 0), n) for offset, n in marks[first:]]
    return times, frames, len(stamps), len(carrying), lost


args = sys.argv[1:]
h2 = args[:1] == ['--h2']
udp = None
if h2:
    args = args[1:]
elif args[:1] == ['--udp']:
    udp, args = tuple(int(a) for a in args[1:5]), args[5:]
port, rate, skip = int(args[0]), float(args[1]), float(args[2])
cmd = args[args.index('--') + 1:]
pcap = f'/tmp/pacing-{os.getpid()}.pcap'
if h2:  # every client segment with data, whole
    capture = ['-s', '0', f'tcp dst port {port} and '
               f'(ip6 or (ip[2:2] - ((ip[0] & 0xf) << 2) - ((tcp[12] & 0xf0) >> 2)) != 0 or tcp[tcpflags] & tcp-syn != 0)']
elif udp:  # the datagrams of a request's size (the UDP length counts its 8-byte header)
    capture = ['-s', '64', f'udp dst port {port} and udp[4:2] >= {udp[0] + 8} and udp[4:2] <= {udp[1] + 8}']
else:
    capture = ['-s', '96', f'tcp dst port {port} and (tcp[tcpflags] & tcp-push != 0)']
cap = subprocess.Popen(['tcpdump', '-i', 'lo', '-n', '-B', '65536', '-w', pcap] + capture,
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
if h2:
    try:
        found, frames, carried, carrying, lost = h2_requests(pcap, port)
    finally:
        os.unlink(pcap)
    ts = np.array(sorted(found))
    count = (f'requests={len(ts)} segments={carried} per_segment={len(ts) / max(carrying, 1):.2f} '
             f'settings={frames[4]} window_update={frames[8]} '
             f'other={sum(frames.values()) - frames[1] - frames[4] - frames[8]} lost={lost}')
else:
    lines = subprocess.run(['tcpdump', '-r', pcap, '-n', '-tt', '-q'], capture_output=True,
                           text=True).stdout.splitlines()
    os.unlink(pcap)
    if udp:  # each packet counts the requests its size says it carries
        one, more = udp[2], udp[3]
        ts = np.array(sorted(float(l.split()[0]) for l in lines if ' UDP, ' in l
                             for _ in range(max(1, 1 + round((int(l.split()[-1]) - one) / more)))))
    else:
        ts = np.array(sorted(float(l.split()[0]) for l in lines if ' tcp ' in l and not l.endswith('tcp 0')))
    count = f'packets={len(ts)}'
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
print(f'{count} steady={len(s)} achieved={achieved:.1f}/s target={rate:.0f}/s '
      f'grid_p50={np.percentile(dev,50):.0f}us grid_p99={np.percentile(dev,99):.0f}us '
      f'grid_p999={np.percentile(dev,99.9):.0f}us win1ms_p99={np.percentile(w,99)/exp:.2f} '
      f'win1ms_max={w.max()/exp:.2f}')
