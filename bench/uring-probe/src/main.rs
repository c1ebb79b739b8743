//! Probe: closed-loop HTTP/1.1 keep-alive GET generator, epoll vs io_uring.
//! Usage: probe-uring <epoll|uring> [-c N] [-d SECS] [-p PORT]
//!        [--fixed] [--defer] [--coop] [--multishot] [--pollfirst] [--link]
//!        [--stamp]
//! --stamp: what measuring a request's time costs at the least, as pace
//! does it: a clock read at each send, and each response received with its
//! kernel receive stamp (SO_TIMESTAMPNS): over epoll by recvmsg, over
//! io_uring (with --multishot) by a multishot recvmsg into the buffer ring.
//! Prints one line: mode, responses, req/s, in-process CPU (getrusage), counters.
use io_uring::{IoUring, cqueue, opcode, squeue, types};
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::IntoRawFd;
use std::time::{Duration, Instant};

const BUF: usize = 16384;

// ---------------------------------------------------------------- parser
/// Incremental response parser, shared by every mode (same parsing cost).
/// Closed loop: at most one response outstanding per connection.
struct Parser {
    hdr: Vec<u8>, // only used when the header block is split across reads
    in_body: bool,
    body_left: usize,
}

fn find_hdr_end(d: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = d[i..].iter().position(|&b| b == b'\n') {
        let j = i + p; // d[j] == '\n'
        if j + 2 < d.len() && d[j + 1] == b'\r' && d[j + 2] == b'\n' {
            return Some(j + 3);
        }
        if j + 1 < d.len() && d[j + 1] == b'\n' {
            return Some(j + 2);
        }
        i = j + 1;
        if i >= d.len() {
            break;
        }
    }
    None
}

fn content_length(h: &[u8]) -> usize {
    const K: &[u8] = b"content-length:";
    for line in h.split(|&b| b == b'\n') {
        if line.len() > K.len() && line[..K.len()].eq_ignore_ascii_case(K) {
            let mut v = 0usize;
            for &b in &line[K.len()..] {
                if b.is_ascii_digit() {
                    v = v * 10 + (b - b'0') as usize;
                } else if b != b' ' && b != b'\t' {
                    break;
                }
            }
            return v;
        }
    }
    0
}

impl Parser {
    fn new() -> Self {
        Parser { hdr: Vec::new(), in_body: false, body_left: 0 }
    }
    /// Feed a chunk; true when the response is complete.
    #[inline]
    fn feed(&mut self, d: &[u8]) -> bool {
        if self.in_body {
            let n = d.len().min(self.body_left);
            self.body_left -= n;
            if self.body_left == 0 {
                self.in_body = false;
                return true;
            }
            return false;
        }
        if self.hdr.is_empty() {
            match find_hdr_end(d) {
                Some(end) => {
                    let cl = content_length(&d[..end]);
                    self.in_body = true;
                    self.body_left = cl;
                    self.feed(&d[end..])
                }
                None => {
                    self.hdr.extend_from_slice(d);
                    false
                }
            }
        } else {
            self.hdr.extend_from_slice(d);
            match find_hdr_end(&self.hdr) {
                Some(end) => {
                    let cl = content_length(&self.hdr[..end]);
                    let rest = self.hdr.len() - end;
                    self.hdr.clear();
                    self.in_body = true;
                    self.body_left = cl - rest.min(cl);
                    if self.body_left == 0 {
                        self.in_body = false;
                        return true;
                    }
                    false
                }
                None => false,
            }
        }
    }
}

// ---------------------------------------------------------------- setup
struct Opts {
    mode: String,
    conns: usize,
    secs: f64,
    port: u16,
    fixed: bool,
    defer: bool,
    coop: bool,
    multishot: bool,
    pollfirst: bool,
    link: bool,
    wait: usize,
    minwait: u32,
    stamp: bool,
}

fn parse_opts() -> Opts {
    let a: Vec<String> = std::env::args().collect();
    let mut o = Opts {
        mode: a.get(1).cloned().unwrap_or_else(|| "epoll".into()),
        conns: 50,
        secs: 5.0,
        port: 18280,
        fixed: false,
        defer: false,
        coop: false,
        multishot: false,
        pollfirst: false,
        link: false,
        wait: 1,
        minwait: 0,
        stamp: false,
    };
    let mut i = 2;
    while i < a.len() {
        match a[i].as_str() {
            "-c" => {
                o.conns = a[i + 1].parse().unwrap();
                i += 1;
            }
            "-d" => {
                o.secs = a[i + 1].parse().unwrap();
                i += 1;
            }
            "-p" => {
                o.port = a[i + 1].parse().unwrap();
                i += 1;
            }
            "--fixed" => o.fixed = true,
            "--defer" => o.defer = true,
            "--coop" => o.coop = true,
            "--multishot" => o.multishot = true,
            "--pollfirst" => o.pollfirst = true,
            "--link" => o.link = true,
            "--stamp" => o.stamp = true,
            "--minwait" => {
                o.minwait = a[i + 1].parse().unwrap();
                i += 1;
            }
            "--wait" => {
                o.wait = a[i + 1].parse().unwrap();
                i += 1;
            }
            x => panic!("unknown arg {x}"),
        }
        i += 1;
    }
    o
}

fn connect(port: u16, n: usize) -> Vec<i32> {
    (0..n)
        .map(|_| {
            let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            s.set_nodelay(true).unwrap();
            s.set_nonblocking(true).unwrap();
            s.into_raw_fd()
        })
        .collect()
}

fn cpu_us() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 * 1e6 + tv.tv_usec as f64;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// Asks the kernel to stamp each received packet (SO_TIMESTAMPNS).
fn stamp_receives(fd: i32) {
    let on: libc::c_int = 1;
    let size = std::mem::size_of_val(&on) as libc::socklen_t;
    let set = unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &on as *const _ as _, size)
    };
    assert_eq!(set, 0);
}

/// The time of the SCM_TIMESTAMPNS in a control message block, in nanoseconds.
fn stamp_in(control: &[u8]) -> Option<u64> {
    let head = std::mem::size_of::<libc::cmsghdr>();
    if control.len() < head + std::mem::size_of::<libc::timespec>() {
        return None;
    }
    let cmsg = unsafe { std::ptr::read_unaligned(control.as_ptr() as *const libc::cmsghdr) };
    if cmsg.cmsg_level != libc::SOL_SOCKET || cmsg.cmsg_type != libc::SCM_TIMESTAMPNS {
        return None;
    }
    let ts = unsafe { std::ptr::read_unaligned(control[head..].as_ptr() as *const libc::timespec) };
    Some(nanoseconds(ts))
}

fn monotonic_ns() -> u64 {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    nanoseconds(ts)
}

fn nanoseconds(ts: libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// recv, or with `stamp` recvmsg with the kernel's receive stamp (counted
/// in `stamps` when there was one).
fn receive(fd: i32, buf: &mut [u8], stamp: bool, stamps: &mut u64) -> isize {
    if !stamp {
        return unsafe { libc::recv(fd, buf.as_mut_ptr() as _, buf.len(), 0) };
    }
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as _, iov_len: buf.len() };
    let mut control = [0u64; 8];
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as _;
    msg.msg_controllen = std::mem::size_of_val(&control);
    let r = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if r > 0 {
        let control: &[u8] = unsafe {
            std::slice::from_raw_parts(control.as_ptr() as *const u8, msg.msg_controllen as usize)
        };
        *stamps += stamp_in(control).is_some() as u64;
    }
    r
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

// ---------------------------------------------------------------- epoll
fn run_epoll(o: &Opts, req: &[u8]) -> (u64, String) {
    let fds = connect(o.port, o.conns);
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    let mut bufs: Vec<Box<[u8]>> =
        (0..o.conns).map(|_| vec![0u8; BUF].into_boxed_slice()).collect();
    let mut parsers: Vec<Parser> = (0..o.conns).map(|_| Parser::new()).collect();
    for (i, &fd) in fds.iter().enumerate() {
        if o.stamp {
            stamp_receives(fd);
        }
        let mut ev =
            libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: i as u64 };
        assert_eq!(unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) }, 0);
    }
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(o.secs);
    for &fd in &fds {
        let r = unsafe { libc::send(fd, req.as_ptr() as _, req.len(), 0) };
        assert_eq!(r as usize, req.len());
    }
    let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let (mut done, mut waits, mut recvs, mut eagain) = (0u64, 0u64, 0u64, 0u64);
    let (mut stamps, mut sent_at) = (0u64, 0u64);
    while Instant::now() < deadline {
        let n = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), evs.len() as i32, 100) };
        waits += 1;
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            panic!("epoll_wait {}", errno());
        }
        for ev in &evs[..n as usize] {
            let i = ev.u64 as usize;
            let fd = fds[i];
            loop {
                let r = receive(fd, &mut bufs[i], o.stamp, &mut stamps);
                recvs += 1;
                if r > 0 {
                    if parsers[i].feed(&bufs[i][..r as usize]) {
                        done += 1;
                        if o.stamp {
                            sent_at = sent_at.wrapping_add(monotonic_ns());
                        }
                        let s = unsafe { libc::send(fd, req.as_ptr() as _, req.len(), 0) };
                        assert_eq!(s as usize, req.len());
                        break;
                    }
                } else if r == 0 {
                    panic!("EOF on conn {i}");
                } else {
                    let e = errno();
                    if e == libc::EAGAIN {
                        eagain += 1;
                        break;
                    }
                    if e == libc::EINTR {
                        continue;
                    }
                    panic!("recv {e}");
                }
            }
        }
    }
    let el = t0.elapsed().as_secs_f64();
    (
        done,
        format!(
            "elapsed={el:.3} epoll_waits={waits} recvs={recvs} eagain={eagain} resp_per_wait={:.1}{}",
            done as f64 / waits as f64,
            if o.stamp { format!(" stamped={stamps} clock_sum={sent_at}") } else { String::new() }
        ),
    )
}

// ---------------------------------------------------------------- uring
const K_RECV: u64 = 0;
const K_SEND: u64 = 1;
const K_MRECV: u64 = 2;
const BGID: u16 = 7;
const NBUFS: usize = 128; // provided-buffer ring entries (power of two)
const PBUF: usize = 4096;

struct BufRing {
    ring: *mut u8, // NBUFS * 16 bytes, tail at byte 14
    mem: Box<[u8]>,
    tail: u16,
}

impl BufRing {
    fn new() -> Self {
        let sz = NBUFS * 16;
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                sz,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        } as *mut u8;
        assert!(ring as isize != -1);
        let mut br = BufRing { ring, mem: vec![0u8; NBUFS * PBUF].into_boxed_slice(), tail: 0 };
        for b in 0..NBUFS as u16 {
            br.put(b);
        }
        br.publish();
        br
    }
    fn put(&mut self, bid: u16) {
        let idx = (self.tail as usize) & (NBUFS - 1);
        unsafe {
            let e = self.ring.add(idx * 16);
            (e as *mut u64).write(self.mem.as_ptr().add(bid as usize * PBUF) as u64);
            (e.add(8) as *mut u32).write(PBUF as u32);
            (e.add(12) as *mut u16).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }
    fn publish(&self) {
        unsafe {
            let t = &*(self.ring.add(14) as *const std::sync::atomic::AtomicU16);
            t.store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }
}

fn run_uring(o: &Opts, req: &[u8]) -> (u64, String) {
    let fds = connect(o.port, o.conns);
    let entries = (2 * o.conns + 8).next_power_of_two().max(64) as u32;
    let mut notes = Vec::<String>::new();
    // Try the requested setup flags, falling back gracefully.
    let mut attempts: Vec<(&str, u8)> = Vec::new();
    if o.defer {
        attempts.push(("single_issuer+defer_taskrun", 2));
    }
    if o.defer || o.coop {
        attempts.push(("coop_taskrun+taskrun_flag", 1));
    }
    attempts.push(("plain", 0));
    let mut ring = None;
    for (name, k) in attempts {
        let mut b = IoUring::<squeue::Entry, cqueue::Entry>::builder();
        b.setup_cqsize(entries * 4);
        match k {
            2 => {
                b.setup_single_issuer().setup_defer_taskrun();
            }
            1 => {
                b.setup_coop_taskrun().setup_taskrun_flag();
            }
            _ => {}
        }
        match b.build(entries) {
            Ok(r) => {
                notes.push(format!("setup={name}"));
                ring = Some(r);
                break;
            }
            Err(e) => notes.push(format!("setup_{name}_REFUSED({e})")),
        }
    }
    let mut ring = ring.expect("no ring");
    let mut fixed = o.fixed;
    if fixed {
        if let Err(e) = ring.submitter().register_files(&fds) {
            notes.push(format!("register_files_REFUSED({e})"));
            fixed = false;
        } else {
            notes.push("fixed_files=ok".into());
        }
    }
    let mut multishot = o.multishot;
    let mut br = None;
    if multishot {
        let b = BufRing::new();
        match unsafe {
            ring.submitter().register_buf_ring_with_flags(b.ring as u64, NBUFS as u16, BGID, 0)
        } {
            Ok(()) => {
                notes.push("buf_ring+multishot=ok".into());
                br = Some(b);
            }
            Err(e) => {
                notes.push(format!("buf_ring_REFUSED({e})"));
                multishot = false;
            }
        }
    }
    let mut bufs: Vec<Box<[u8]>> =
        (0..o.conns).map(|_| vec![0u8; BUF].into_boxed_slice()).collect();
    let mut parsers: Vec<Parser> = (0..o.conns).map(|_| Parser::new()).collect();
    let ioprio: u16 = if o.pollfirst { 1 } else { 0 }; // IORING_RECVSEND_POLL_FIRST

    // SQE builders
    let send_sqe = |i: usize, fd: i32| -> squeue::Entry {
        let e = if fixed {
            opcode::Send::new(types::Fixed(i as u32), req.as_ptr(), req.len() as u32).build()
        } else {
            opcode::Send::new(types::Fd(fd), req.as_ptr(), req.len() as u32).build()
        };
        e.user_data(((i as u64) << 8) | K_SEND)
    };
    let recv_sqe = |i: usize, fd: i32, buf: *mut u8| -> squeue::Entry {
        let e = if fixed {
            opcode::Recv::new(types::Fixed(i as u32), buf, BUF as u32).ioprio(ioprio).build()
        } else {
            opcode::Recv::new(types::Fd(fd), buf, BUF as u32).ioprio(ioprio).build()
        };
        e.user_data(((i as u64) << 8) | K_RECV)
    };
    // The template of a stamped multishot recvmsg: no address, room for
    // one SCM_TIMESTAMPNS (each completion's buffer starts with the
    // io_uring_recvmsg_out header, then the control block, then data).
    let mut template: libc::msghdr = unsafe { std::mem::zeroed() };
    template.msg_controllen = 64;
    let stamp = o.stamp && multishot;
    if o.stamp && !multishot {
        notes.push("stamp_IGNORED(needs --multishot)".into());
    }
    if stamp {
        fds.iter().for_each(|&fd| stamp_receives(fd));
        notes.push("stamped_recvmsg_multishot".into());
    }
    let mrecv_sqe = |i: usize, fd: i32| -> squeue::Entry {
        let e = match (fixed, stamp) {
            (true, true) => {
                opcode::RecvMsgMulti::new(types::Fixed(i as u32), &template, BGID).build()
            }
            (false, true) => opcode::RecvMsgMulti::new(types::Fd(fd), &template, BGID).build(),
            (true, false) => opcode::RecvMulti::new(types::Fixed(i as u32), BGID).build(),
            (false, false) => opcode::RecvMulti::new(types::Fd(fd), BGID).build(),
        };
        e.user_data(((i as u64) << 8) | K_MRECV)
    };
    let (mut stamps, mut sent_at) = (0u64, 0u64);

    let mut pending: Vec<squeue::Entry> = Vec::with_capacity(4 * o.conns);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(o.secs);
    for i in 0..o.conns {
        if multishot {
            pending.push(mrecv_sqe(i, fds[i]));
            pending.push(send_sqe(i, fds[i]));
        } else if o.link {
            pending.push(send_sqe(i, fds[i]).flags(squeue::Flags::IO_LINK));
            pending.push(recv_sqe(i, fds[i], bufs[i].as_mut_ptr()));
        } else {
            pending.push(send_sqe(i, fds[i]));
            pending.push(recv_sqe(i, fds[i], bufs[i].as_mut_ptr()));
        }
    }
    let (mut done, mut enters, mut cqes, mut eagain, mut rearm, mut short_send, mut nobufs) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut need_publish = false;
    while Instant::now() < deadline {
        {
            let mut sq = ring.submission();
            for e in pending.drain(..) {
                unsafe { sq.push(&e).expect("sq full") };
            }
        }
        let r = if o.minwait > 0 {
            let ts = types::Timespec::new().nsec(100_000_000);
            let args = types::SubmitArgs::new().timespec(&ts).min_wait_usec(o.minwait);
            ring.submitter().submit_with_args(o.wait, &args)
        } else {
            ring.submit_and_wait(o.wait)
        };
        match r {
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
            Ok(_) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EINTR)
                    || e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => panic!("submit_and_wait {e}"),
        }
        enters += 1;
        for cqe in ring.completion() {
            cqes += 1;
            let ud = cqe.user_data();
            let i = (ud >> 8) as usize;
            let res = cqe.result();
            match ud & 0xff {
                K_SEND => {
                    if res != req.len() as i32 {
                        short_send += 1;
                        if res < 0 {
                            panic!("send err {res}");
                        }
                    }
                }
                K_RECV => {
                    if res > 0 {
                        let bp = bufs[i].as_mut_ptr();
                        if parsers[i].feed(&bufs[i][..res as usize]) {
                            done += 1;
                            if o.link {
                                pending.push(send_sqe(i, fds[i]).flags(squeue::Flags::IO_LINK));
                            } else {
                                pending.push(send_sqe(i, fds[i]));
                            }
                        }
                        pending.push(recv_sqe(i, fds[i], bp));
                    } else if res == -libc::EAGAIN {
                        eagain += 1;
                        pending.push(recv_sqe(i, fds[i], bufs[i].as_mut_ptr()));
                    } else if res == -libc::ECANCELED {
                        panic!("recv canceled (link broken)");
                    } else {
                        panic!("recv res {res} conn {i}");
                    }
                }
                K_MRECV => {
                    let fl = cqe.flags();
                    if res > 0 {
                        let bid = cqueue::buffer_select(fl).expect("no buffer id");
                        let b = br.as_mut().unwrap();
                        let d = &b.mem[bid as usize * PBUF..bid as usize * PBUF + res as usize];
                        let complete = if stamp {
                            let out = types::RecvMsgOut::parse(d, &template).expect("recvmsg_out");
                            stamps += stamp_in(out.control_data()).is_some() as u64;
                            parsers[i].feed(out.payload_data())
                        } else {
                            parsers[i].feed(d)
                        };
                        if complete {
                            done += 1;
                            if stamp {
                                sent_at = sent_at.wrapping_add(monotonic_ns());
                            }
                            pending.push(send_sqe(i, fds[i]));
                        }
                        b.put(bid);
                        need_publish = true;
                    } else if res == -libc::ENOBUFS {
                        nobufs += 1;
                    } else if res == 0 {
                        panic!("EOF conn {i}");
                    } else if res < 0 {
                        panic!("mrecv res {res}");
                    }
                    if !cqueue::more(fl) {
                        rearm += 1;
                        pending.push(mrecv_sqe(i, fds[i]));
                    }
                }
                _ => unreachable!(),
            }
        }
        if need_publish {
            br.as_ref().unwrap().publish();
            need_publish = false;
        }
    }
    let el = t0.elapsed().as_secs_f64();
    let _ = multishot;
    (
        done,
        format!(
            "elapsed={el:.3} enters={enters} cqes={cqes} resp_per_enter={:.1} eagain={eagain} rearm={rearm} short_send={short_send} nobufs={nobufs} {}{}",
            done as f64 / enters as f64,
            notes.join(","),
            if stamp { format!(" stamped={stamps} clock_sum={sent_at}") } else { String::new() }
        ),
    )
}

fn main() {
    let o = parse_opts();
    let req =
        format!("GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n", o.port).into_bytes();
    let c0 = cpu_us();
    let (done, extra) = match o.mode.as_str() {
        "epoll" => run_epoll(&o, &req),
        "uring" => run_uring(&o, &req),
        m => panic!("mode {m}"),
    };
    let cpu = cpu_us() - c0;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "mode={} c={} responses={} rps={:.0} cpu_us_per_req_inproc={:.3} {}",
        o.mode,
        o.conns,
        done,
        done as f64 / o.secs,
        cpu / done as f64,
        extra
    )
    .unwrap();
}
