//! tinyproxy, a real HTTP proxy, for `tests/proxy.rs`: in the foreground
//! (`-d`) with its own configuration in a temporary directory, on a free
//! port of 127.0.0.1, logging every request it gets; killed on drop.
#![allow(dead_code)]

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{installed, DieWithTest};

const TINYPROXY: &str = "/usr/bin/tinyproxy";

pub struct Tinyproxy {
    child: Child,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

/// How the proxy of a test is set up.
#[derive(Clone, Debug, Default)]
pub struct TinyproxyOptions {
    /// Ports CONNECT may reach besides 443 (tinyproxy allows only 443 and
    /// 563 by default, and every port when none is listed).
    pub connect_ports: Vec<u16>,
    /// `BasicAuth user password`: the proxy wants these credentials.
    pub basic_auth: Option<(String, String)>,
}

impl Tinyproxy {
    /// Starts tinyproxy, or returns `None` (after saying so loudly) when
    /// it is not installed. In CI a missing tinyproxy fails the test.
    pub fn start(options: TinyproxyOptions) -> Option<Tinyproxy> {
        if !installed(TINYPROXY, "tinyproxy", "proxy") {
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary directory for tinyproxy");
        // tinyproxy has no `Port 0`: the port was free a moment ago; a rare
        // clash shows as tinyproxy exiting, and the next attempt takes
        // another port.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let conf = dir.path().join("tinyproxy.conf");
            fs::write(&conf, config(dir.path(), port, &options)).unwrap();
            let mut child = Command::new(TINYPROXY)
                .arg("-d")
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .die_with_test()
                .spawn()
                .expect("start tinyproxy");
            if wait_ready(&mut child, addr) {
                return Some(Tinyproxy { child, addr, dir });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "tinyproxy did not start; see its log: {}",
            fs::read_to_string(log(&dir)).unwrap_or_default()
        );
    }

    /// `http://127.0.0.1:port`, with `user:password@` when given.
    pub fn url(&self, credentials: Option<(&str, &str)>) -> String {
        match credentials {
            Some((user, password)) => format!("http://{user}:{password}@{}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }

    /// The request lines tinyproxy got from its clients, as they sent them
    /// (`GET http://127.0.0.1:8080/ HTTP/1.1`, `CONNECT 127.0.0.1:8443
    /// HTTP/1.1`), in order.
    pub fn requests(&self) -> Vec<String> {
        let text = fs::read_to_string(log(&self.dir)).unwrap_or_default();
        text.lines()
            .filter_map(|line| line.split_once("): ").filter(|_| line.contains(" Request (")))
            .map(|(_, request)| request.to_string())
            .collect()
    }

    /// [`Tinyproxy::requests`] once at least `n` are logged (tinyproxy
    /// writes each line as it reads the request), or after 5 s.
    pub fn requests_at_least(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let requests = self.requests();
            if requests.len() >= n || Instant::now() >= deadline {
                return requests;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn log(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("tinyproxy.log")
}

fn config(dir: &Path, port: u16, options: &TinyproxyOptions) -> String {
    let mut conf = format!(
        "Port {port}
Listen 127.0.0.1
Timeout 30
MaxClients 256
Allow 127.0.0.1
LogFile \"{}/tinyproxy.log\"
LogLevel Connect
ConnectPort 443
",
        dir.display()
    );
    for port in &options.connect_ports {
        conf.push_str(&format!("ConnectPort {port}\n"));
    }
    if let Some((user, password)) = &options.basic_auth {
        conf.push_str(&format!("BasicAuth {user} {password}\n"));
    }
    conf
}

/// Polls until tinyproxy accepts connections, or exits, or 5 s pass.
fn wait_ready(child: &mut Child, addr: SocketAddr) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}
