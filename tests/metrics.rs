//! `--metrics`: the run's figures read by a real Prometheus (Debian's
//! `prometheus`, started by the test on a free port, scraping every
//! second): during a paced run the request count and a p99 are there;
//! once it ended, the last scrape (`--metrics-linger`) has the report's
//! figures; the series of two shards add up with `sum`. Without
//! Prometheus: the listener's answers, and a bad address as a setup error
//! before any load.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::Value;

use common::{
    default_server, http_get, installed, load_lock, pace, spawn_pace, spawn_pace_with_env,
    stretched, url, DieWithTest, Run,
};

const PROMETHEUS: &str = "/usr/bin/prometheus";
const LIMIT: Duration = Duration::from_secs(60);

/// The upper bounds of pace's latency buckets, seconds (10 a decade from
/// 10 us: 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8).
fn bounds() -> Vec<f64> {
    let steps = [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0];
    let mut bounds: Vec<f64> =
        (0..7).flat_map(|d| steps.iter().map(move |s| s * 1e-5 * 10f64.powi(d))).collect();
    bounds.push(100.0);
    bounds
}

/// The bucket a value falls in (the first bound not below it).
fn bucket_of(seconds: f64) -> usize {
    // A hair of room for decimal bounds (1.25e-5 is 12 us in pace).
    bounds().iter().position(|&b| seconds <= b * 1.0001).unwrap_or(71)
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

// ----- Prometheus -------------------------------------------------------------------

/// A Prometheus scraping `targets` every second, with its data in a
/// temporary directory; killed on drop.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
    /// Served over TLS: how the test's client trusts it.
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Prometheus {
    /// Started and ready, or None (loudly) when it is not installed; in CI
    /// a missing Prometheus fails the test.
    fn start(targets: &[u16]) -> Option<Prometheus> {
        Prometheus::start_with(targets, &[], None)
    }

    /// [`Prometheus::start`] with these extra arguments, and over https
    /// with a certificate of `pki` for 127.0.0.1 when given.
    fn start_with(targets: &[u16], args: &[&str], pki: Option<&Pki>) -> Option<Prometheus> {
        if !installed(PROMETHEUS, "prometheus", "Prometheus") {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: pace\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        );
        fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let web_config = dir.path().join("web.yml");
        let tls = pki.map(|pki| {
            let (cert, key) = pki.issue(dir.path(), "127.0.0.1");
            let config = format!(
                "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
                cert.display(),
                key.display()
            );
            fs::write(&web_config, config).unwrap();
            pki.client()
        });
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let log = fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .args(tls.is_some().then(|| format!("--web.config.file={}", web_config.display())))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .die_with_test()
            .spawn()
            .expect("start prometheus");
        let mut prometheus = Prometheus { child, addr, dir, tls };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = prometheus.child.try_wait() {
                panic!("prometheus exited ({status}):\n{}", prometheus.log());
            }
            let ready = prometheus.get("/-/ready");
            // Go answers an HTTP/1.0 request in HTTP/1.0.
            if ready.is_some_and(|response| response.split(' ').nth(1) == Some("200")) {
                return Some(prometheus);
            }
            assert!(Instant::now() < deadline, "prometheus not ready:\n{}", prometheus.log());
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// A GET of `path` over http or https; the whole response.
    fn get(&self, path: &str) -> Option<String> {
        match &self.tls {
            None => http_get(self.addr, path),
            Some(tls) => https_get(self.addr, path, tls),
        }
    }

    /// The URL of its remote-write receiver.
    fn write_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/api/v1/write", self.addr)
    }

    /// An instant PromQL query over the HTTP API: each series' labels and
    /// value.
    fn query(&self, promql: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let path = format!("/api/v1/query?query={}", percent_encode(promql));
        let response =
            self.get(&path).unwrap_or_else(|| panic!("no answer to {promql}:\n{}", self.log()));
        let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
        let json: Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{promql}: not JSON ({e}): {response}"));
        assert_eq!(json["status"], "success", "{promql}: {json}");
        let results = json["data"]["result"].as_array().expect("a vector").clone();
        results
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                let value = series["value"][1].as_str().unwrap().parse::<f64>().unwrap();
                (labels, value)
            })
            .collect()
    }

    /// The one value of a query that yields one series.
    fn value(&self, promql: &str) -> Option<f64> {
        let results = self.query(promql);
        assert!(results.len() <= 1, "{promql}: {results:?}");
        results.first().map(|(_, value)| *value)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA of the test's, for a Prometheus served over TLS.
struct Pki {
    dir: tempfile::TempDir,
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "pace test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let pki = Pki { dir: tempfile::tempdir().unwrap(), ca };
        fs::write(pki.ca_file(), pki.ca.pem()).unwrap();
        pki
    }

    /// The CA's certificate, in PEM.
    fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A certificate for `name` and its key, written in `dir`.
    fn issue(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        let certificate = params.signed_by(&key, &self.ca).unwrap();
        let (cert, key_file) = (dir.join("server.pem"), dir.join("server-key.pem"));
        fs::write(&cert, certificate.pem()).unwrap();
        fs::write(&key_file, key.serialize_pem()).unwrap();
        (cert, key_file)
    }

    /// A TLS client that trusts the CA.
    fn client(&self) -> Arc<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Arc::new(config)
    }
}

/// [`http_get`] over TLS.
fn https_get(addr: SocketAddr, path: &str, tls: &Arc<rustls::ClientConfig>) -> Option<String> {
    let socket = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    socket.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let name = rustls::pki_types::ServerName::from(addr.ip());
    let session = rustls::ClientConnection::new(tls.clone(), name).ok()?;
    let mut stream = rustls::StreamOwned::new(session, socket);
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = Vec::new();
    match stream.read_to_end(&mut response) {
        Ok(_) => {}
        // A close without TLS's close_notify, after the whole response.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        Err(_) => return None,
    }
    String::from_utf8(response).ok()
}

/// A query string value, every byte but the unreserved ones encoded.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The final JSON report of a `-e -o FILE` run.
fn report(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

fn p99_seconds(report: &Value) -> f64 {
    let us = &report["latency"]["corrected"]["percentiles_us"]["99"];
    us.as_f64().unwrap_or_else(|| panic!("no p99 in {report}")) / 1e6
}

/// Asserts that Prometheus's estimate of a quantile is in the bucket of
/// pace's exact one, or the next (the two count ranks a little apart).
fn assert_same_bucket(estimate: f64, exact: f64, what: &str) {
    let (a, b) = (bucket_of(estimate), bucket_of(exact));
    assert!(
        a.abs_diff(b) <= 1,
        "{what}: Prometheus says {estimate} s (bucket {a}), pace {exact} s (bucket {b})"
    );
}

/// A rate computed in floating point: the plan's, give or take rounding.
fn assert_close(value: Option<f64>, expected: f64) {
    let value = value.unwrap_or_else(|| panic!("no value, expected {expected}"));
    assert!((value - expected).abs() < 1e-6 * expected, "{value}, expected {expected}");
}

/// The last value Prometheus scraped of each series (a finished run's
/// target is down, and its series stale for instant queries).
fn last(series: &str) -> String {
    format!("last_over_time({series}[10m])")
}

// ----- with Prometheus ----------------------------------------------------------------

/// A paced run scraped every second: during the run the request count
/// grows and a p99 is there; after it, the last scrape (made while pace
/// lingered) holds exactly the report's count, its target rate, and a
/// p99 in the bucket of the report's.
#[test]
fn prometheus_reads_a_paced_run_while_it_runs_and_its_final_figures() {
    let _load = load_lock();
    let server = default_server();
    let port = free_port();
    let Some(prometheus) = Prometheus::start(&[port]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let metrics = format!("127.0.0.1:{port}");
    let target = url(server.addr(), "/");
    let args = [
        "-t1",
        "-c4",
        "-d6s",
        "-R200",
        "--metrics",
        &metrics,
        "--metrics-linger",
        "3s",
        "-e",
        "-o",
        out.to_str().unwrap(),
        &target,
    ];
    let mut running = spawn_pace(&args);

    // During the run: a count above zero, below the plan's 1200, from a
    // run not finished yet, and a p99.
    let mut during = None;
    while during.is_none() && running.is_running() {
        let requests = prometheus.value("pace_requests_total");
        let finished = prometheus.value("pace_run_finished");
        let p99 = prometheus
            .value("histogram_quantile(0.99, pace_latency_corrected_seconds_bucket)")
            .filter(|p99| p99.is_finite());
        if let (Some(requests), Some(0.0), Some(p99)) = (requests, finished, p99) {
            if requests > 0.0 {
                during = Some((requests, p99));
            }
        }
        thread::sleep(Duration::from_millis(200));
    }
    let run = running.wait(LIMIT);
    run.assert_ok();
    let (requests_during, p99_during) =
        during.unwrap_or_else(|| panic!("nothing scraped during the run\n{run}"));
    let report = report(&out);
    let requests = report["requests"].as_u64().unwrap();
    assert!(requests_during < requests as f64, "{requests_during} of {requests}");
    assert!(p99_during > 0.0);

    // The final figures, scraped while pace lingered.
    assert_eq!(prometheus.value(&last("pace_run_finished")), Some(1.0), "{run}");
    assert_eq!(prometheus.value(&last("pace_requests_total")), Some(requests as f64));
    let ok = prometheus.value(&last("pace_responses_total{status=\"200\"}"));
    assert_eq!(ok, Some(requests as f64));
    let bytes = report["bytes"].as_u64().unwrap() as f64;
    assert_eq!(prometheus.value(&last("pace_read_bytes_total")), Some(bytes));
    let errors = prometheus.query(&last("pace_errors_total"));
    assert_eq!(errors.len(), 7, "{errors:?}");
    assert!(errors.iter().all(|(_, n)| *n == 0.0), "{errors:?}");
    assert_close(prometheus.value(&last("pace_target_rate_requests_per_second")), 200.0);
    let count = prometheus.value(&last("pace_latency_corrected_seconds_count"));
    assert_eq!(count, Some(report["latency"]["corrected"]["count"].as_u64().unwrap() as f64));
    let p99 = prometheus
        .value(&format!(
            "histogram_quantile(0.99, {})",
            last("pace_latency_corrected_seconds_bucket")
        ))
        .unwrap();
    assert_same_bucket(p99, p99_seconds(&report), "p99 of the run");
    // Every series has the shard label; Prometheus adds job and instance.
    let (labels, _) = &prometheus.query(&last("pace_requests_total"))[0];
    assert_eq!(labels["shard"], "0/1");
    assert_eq!(labels["instance"], metrics);
}

/// Two shards of one plan, each with its own metrics port, scraped by one
/// Prometheus: `sum` over the shards is the sum of their reports, and
/// the p99 of the summed buckets is in the bucket of `pace merge`'s.
#[test]
fn the_series_of_two_shards_add_up() {
    let _load = load_lock();
    let server = default_server();
    let ports = [free_port(), free_port()];
    let Some(prometheus) = Prometheus::start(&ports) else { return };
    let dir = tempfile::tempdir().unwrap();
    let target = url(server.addr(), "/");
    let outputs: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("{i}.json"))).collect();
    let shards: Vec<_> = (0..2)
        .map(|i| {
            let (shard, metrics) = (format!("{i}/2"), format!("127.0.0.1:{}", ports[i]));
            spawn_pace(&[
                "-t1",
                "-c2",
                "-d4s",
                "-R300",
                "--shard",
                &shard,
                "--metrics",
                &metrics,
                "--metrics-linger",
                "3s",
                "-e",
                "-o",
                outputs[i].to_str().unwrap(),
                &target,
            ])
        })
        .collect();
    let runs: Vec<Run> = shards.into_iter().map(|shard| shard.wait(LIMIT)).collect();
    runs.iter().for_each(|run| {
        run.assert_ok();
    });
    let reports: Vec<Value> = outputs.iter().map(|path| report(path)).collect();
    let requests: u64 = reports.iter().map(|r| r["requests"].as_u64().unwrap()).sum();

    let per_shard = prometheus.query(&last("pace_requests_total"));
    let shards: Vec<&str> = per_shard.iter().map(|(labels, _)| labels["shard"].as_str()).collect();
    assert_eq!(shards.len(), 2, "{per_shard:?}");
    assert!(shards.contains(&"0/2") && shards.contains(&"1/2"), "{shards:?}");
    let sum = |series: &str| prometheus.value(&format!("sum({})", last(series)));
    assert_eq!(sum("pace_requests_total"), Some(requests as f64), "{per_shard:?}");
    // Each shard's target is half the plan's.
    assert_close(sum("pace_target_rate_requests_per_second"), 300.0);
    let count = sum("pace_latency_corrected_seconds_count");
    assert_eq!(count, Some(requests as f64));

    let merged = pace(&["merge", "-e", path(&outputs[0]), path(&outputs[1])], LIMIT);
    merged.assert_ok();
    let merged: Value = serde_json::from_str(merged.stdout.trim()).unwrap();
    assert_eq!(merged["requests"].as_u64(), Some(requests));
    let p99 = prometheus
        .value(&format!(
            "histogram_quantile(0.99, sum by (le) ({}))",
            last("pace_latency_corrected_seconds_bucket")
        ))
        .unwrap();
    assert_same_bucket(p99, p99_seconds(&merged), "p99 of the two shards");
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `--metrics-push`: a run shorter than any scrape interval sends its
/// final figures by remote write to Prometheus's receiver; they are the
/// report's. A receiver that refuses them, or is not there, is said, with
/// exit code 2 (the report is printed all the same).
#[test]
fn the_final_figures_are_pushed_by_remote_write() {
    let _load = load_lock();
    let server = default_server();
    let receiver = ["--web.enable-remote-write-receiver"];
    let Some(prometheus) = Prometheus::start_with(&[], &receiver, None) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let write = format!("http://{}/api/v1/write", prometheus.addr);
    let target = url(server.addr(), "/");
    let args =
        ["-t1", "-c2", "-d1s", "-R200", "--metrics-push", &write, "-e", "-o", path(&out), &target];
    let run = pace(&args, LIMIT);
    run.assert_ok();
    assert!(!run.stderr.contains("cannot push"), "{run}");
    let report = report(&out);
    let requests = report["requests"].as_u64().unwrap() as f64;
    let pushed = prometheus.query("pace_requests_total");
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    let (labels, value) = &pushed[0];
    assert_eq!(*value, requests);
    assert_eq!((labels["job"].as_str(), labels["shard"].as_str()), ("pace", "0/1"));
    assert_eq!(prometheus.value("pace_run_finished"), Some(1.0));
    assert_close(prometheus.value("pace_target_rate_requests_per_second"), 200.0);
    let ok = prometheus.value("pace_responses_total{status=\"200\"}");
    assert_eq!(ok, Some(requests));
    let p99 = prometheus
        .value("histogram_quantile(0.99, pace_latency_corrected_seconds_bucket)")
        .unwrap();
    assert_same_bucket(p99, p99_seconds(&report), "p99 pushed");

    let refused = format!("http://{}/api/v1/nothing", prometheus.addr);
    let run = pace(&["-d200ms", "--metrics-push", &refused, &target], LIMIT);
    run.assert_code(2);
    assert!(run.stdout.contains("Requests/sec:"), "the report comes first\n{run}");
    let said =
        format!("pace: cannot push the metrics to {refused}: the receiver answered HTTP/1.1 404");
    assert!(run.stderr.starts_with(&said), "{run}");
    let nowhere = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let run = pace(&["-d200ms", "--metrics-push", &nowhere, &target], LIMIT);
    run.assert_code(2);
    let said = format!("pace: cannot push the metrics to {nowhere}: Connection refused\n");
    assert!(run.stderr.ends_with(&said), "{run}");
}

/// `--metrics-push https://...`: remote write to a Prometheus served over
/// TLS, its certificate from a CA the system trusts (`SSL_CERT_FILE`, as
/// the system's trust store is read); without that trust the push is
/// refused in words (verified by default; `-k` is the target's).
#[test]
fn the_final_figures_are_pushed_over_https() {
    let _load = load_lock();
    let server = default_server();
    let pki = Pki::new();
    let receiver = ["--web.enable-remote-write-receiver"];
    let Some(prometheus) = Prometheus::start_with(&[], &receiver, Some(&pki)) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let write = prometheus.write_url();
    assert!(write.starts_with("https://"));
    let target = url(server.addr(), "/");
    let args =
        ["-t1", "-c2", "-d1s", "-R100", "--metrics-push", &write, "-e", "-o", path(&out), &target];
    let ca = pki.ca_file();
    let trusted = [("SSL_CERT_FILE", path(&ca))];
    let run = spawn_pace_with_env(&args, &trusted).wait(LIMIT);
    run.assert_ok();
    assert!(!run.stderr.contains("cannot push"), "{run}");
    let requests = report(&out)["requests"].as_u64().unwrap() as f64;
    assert_eq!(prometheus.value("pace_requests_total"), Some(requests));
    assert_eq!(prometheus.value("pace_run_finished"), Some(1.0));

    // The system's own trust store does not know the test's CA; -k is
    // the target's and does not make pace trust the receiver.
    let run = pace(&["-k", "-d200ms", "--metrics-push", &write, &target], LIMIT);
    run.assert_code(2);
    assert!(run.stdout.contains("Requests/sec:"), "the report comes first\n{run}");
    let said = format!("pace: cannot push the metrics to {write}: ");
    assert!(run.stderr.contains(&said), "{run}");
    assert!(run.stderr.contains("certificate"), "{run}");
}

/// A remote-write receiver written here, over plain HTTP: it keeps every
/// request's head and answers 204, or (`answers` false) holds the
/// connection without a word.
struct Receiver {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    fn start(answers: bool) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = heads.clone();
        thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(mut socket) = socket else { continue };
                let _ = socket.set_read_timeout(Some(Duration::from_secs(10)));
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                // The head, then its Content-Length of body.
                let complete = |request: &[u8]| {
                    let end = request.windows(4).position(|w| w == b"\r\n\r\n")?;
                    let head = String::from_utf8_lossy(&request[..end]).into_owned();
                    let body = &request[end + 4..];
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase().strip_prefix("content-length: ")?.parse().ok()
                        })
                        .unwrap_or(0usize);
                    (body.len() >= length).then_some(head)
                };
                let head = loop {
                    if let Some(head) = complete(&request) {
                        break head;
                    }
                    match socket.read(&mut buffer) {
                        Ok(0) | Err(_) => break String::new(),
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                };
                kept.lock().unwrap().push(head);
                if !answers {
                    // Until pace leaves.
                    let _ = socket.set_read_timeout(None);
                    while matches!(socket.read(&mut buffer), Ok(1..)) {}
                    continue;
                }
                let _ = socket.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            }
        });
        Receiver { addr, heads }
    }
}

/// `--metrics-push-token-file`: the token reaches the receiver as
/// `Authorization: Bearer`, and nowhere else (not in what pace prints).
#[test]
fn a_bearer_token_from_a_file_reaches_the_receiver() {
    let _load = load_lock();
    let server = default_server();
    let receiver = Receiver::start(true);
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    fs::write(&token_file, "glc_eyJrIjoiYWJj.ZGVm\n").unwrap();
    let write = format!("http://{}/api/v1/write", receiver.addr);
    let target = url(server.addr(), "/");
    let run = pace(
        &[
            "-d200ms",
            "--metrics-push",
            &write,
            "--metrics-push-token-file",
            path(&token_file),
            &target,
        ],
        LIMIT,
    );
    run.assert_ok();
    let heads = receiver.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}\n{run}");
    let head = &heads[0];
    assert!(head.starts_with("POST /api/v1/write HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("\r\nAuthorization: Bearer glc_eyJrIjoiYWJj.ZGVm\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Encoding: snappy\r\n"), "{head}");
    assert!(!run.stdout.contains("glc_") && !run.stderr.contains("glc_"), "{run}");
}

/// A signal during the push (to a receiver that never answers) ends it at
/// once, with the signal's exit code: the report was printed before.
#[test]
fn a_signal_ends_the_push() {
    let _load = load_lock();
    let server = default_server();
    let receiver = Receiver::start(false);
    let write = format!("http://{}/api/v1/write", receiver.addr);
    let target = url(server.addr(), "/");
    let running = spawn_pace(&["-d200ms", "--metrics-push", &write, &target]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.heads.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the push never came");
        thread::sleep(Duration::from_millis(10));
    }
    running.signal(libc::SIGINT);
    let signalled = Instant::now();
    let run = running.wait(LIMIT);
    let after = signalled.elapsed();
    run.assert_code(130);
    assert!(after < Duration::from_secs(2), "{after:?} after SIGINT\n{run}");
    assert!(run.stdout.contains("Requests/sec:"), "the report comes first\n{run}");
    let said = format!("pace: cannot push the metrics to {write}: stopped by a signal\n");
    assert!(run.stderr.ends_with(&said), "{run}");
}

// ----- without Prometheus ----------------------------------------------------------------

/// The listener during a run: `/metrics` in the text format, 404
/// elsewhere; its figures are the report's at the end (port 0: the port
/// taken is said on stderr).
#[test]
fn the_listener_answers_during_the_run() {
    let _load = load_lock();
    let server = default_server();
    let port = free_port();
    let metrics = format!("127.0.0.1:{port}");
    let target = url(server.addr(), "/");
    let args =
        ["-t1", "-c2", "-d2s", "-R100", "--metrics", &metrics, "--metrics-linger", "1s", &target];
    let mut running = spawn_pace(&args);
    let addr: SocketAddr = metrics.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut finished = None;
    while running.is_running() && Instant::now() < deadline {
        if let Some(response) = http_get(addr, "/metrics") {
            assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
            assert!(response.contains("\r\nContent-Type: text/plain; version=0.0.4"), "{response}");
            let not_found = http_get(addr, "/").unwrap();
            assert!(not_found.starts_with("HTTP/1.1 404 "), "{not_found}");
            if response.contains("pace_run_finished{shard=\"0/1\"} 1\n") {
                finished = Some(response);
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    let run = running.wait(LIMIT);
    run.assert_ok();
    let finished = finished.unwrap_or_else(|| panic!("never served the final figures\n{run}"));
    let line = format!("pace_requests_total{{shard=\"0/1\"}} {}\n", run.report().requests());
    assert!(finished.contains(&line), "{line}: {finished}");
    // wrk's report, unchanged; no port said (none was 0).
    assert!(run.stdout.contains("Requests/sec:"), "{run}");
    assert!(!run.stderr.contains("metrics at"), "{run}");

    let run = pace(&["-d300ms", "--metrics", "127.0.0.1:0", &target], LIMIT);
    run.assert_ok();
    let said =
        run.stderr.lines().find_map(|l| l.strip_prefix("pace: metrics at http://127.0.0.1:"));
    let port = said.and_then(|rest| rest.strip_suffix("/metrics")).map(str::parse::<u16>);
    assert!(matches!(port, Some(Ok(port)) if port != 0), "{run}");
}

/// `--metrics-linger` keeps pace up with its final figures, until a
/// signal ends the wait: the run had completed, so the exit code is 0.
#[test]
fn a_signal_ends_the_linger() {
    let _load = load_lock();
    let server = default_server();
    let metrics = format!("127.0.0.1:{}", free_port());
    let target = url(server.addr(), "/");
    let args = ["-d300ms", "--metrics", &metrics, "--metrics-linger", "60s", &target];
    let mut running = spawn_pace(&args);
    let addr: SocketAddr = metrics.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let response = http_get(addr, "/metrics").unwrap_or_default();
        if response.contains("pace_run_finished{shard=\"0/1\"} 1\n") {
            break;
        }
        assert!(running.is_running() && Instant::now() < deadline, "no final figures");
        thread::sleep(Duration::from_millis(50));
    }
    // Lingering: still up and serving a while after the run.
    thread::sleep(Duration::from_millis(500));
    assert!(running.is_running());
    assert!(http_get(addr, "/metrics").is_some_and(|r| r.starts_with("HTTP/1.1 200")));
    running.signal(libc::SIGTERM);
    let run = running.wait(Duration::from_secs(30));
    run.assert_ok();
    assert!(run.wall < stretched(Duration::from_secs(30)), "the signal ended the linger\n{run}");
    assert!(run.stdout.contains("Requests/sec:"), "{run}");
}

/// Connections that trickle a request head, more of them than the
/// listener serves at once, cannot lock out the scrapes (a new connection
/// closes the oldest), and none is held longer than the deadline for a
/// whole head (5 s), however often it sends a byte.
#[test]
fn trickling_connections_cannot_lock_out_the_scrapes() {
    let _load = load_lock();
    let server = default_server();
    let metrics = format!("127.0.0.1:{}", free_port());
    let target = url(server.addr(), "/");
    let running = spawn_pace(&["-t1", "-c1", "-d60s", "-R10", "--metrics", &metrics, &target]);
    let addr: SocketAddr = metrics.parse().unwrap();
    let scraped =
        |response: Option<String>| response.is_some_and(|r| r.starts_with("HTTP/1.1 200"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !scraped(http_get(addr, "/metrics")) {
        assert!(Instant::now() < deadline, "--metrics never answered");
        thread::sleep(Duration::from_millis(50));
    }
    // 20 connections (the listener serves 16 at once), a byte a second:
    // every scrape is answered while they trickle.
    let _many = Trickling::start(addr, 20, Duration::from_secs(1));
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        let response = http_get(addr, "/metrics");
        assert!(scraped(response.clone()), "a scrape was not answered: {response:?}");
        thread::sleep(Duration::from_millis(200));
    }
    // A few more, and no scrape to make room: none is held past the 5 s
    // deadline of its whole head (plus a loaded machine's slack).
    let few = Trickling::start(addr, 3, Duration::from_secs(1));
    let started = Instant::now();
    let held_at_most = Duration::from_secs(5) + Duration::from_secs(5);
    while few.open() > 0 {
        let held = started.elapsed();
        assert!(held < held_at_most, "{} connections still held after {held:?}", few.open());
        thread::sleep(Duration::from_millis(100));
    }
    running.signal(libc::SIGINT);
    let run = running.wait(LIMIT);
    run.assert_code(130);
}

/// Connections that send a request head a byte at a time, for ever, on a
/// thread of their own; the count the listener has not closed yet.
struct Trickling {
    open: Arc<Mutex<usize>>,
}

impl Trickling {
    fn start(addr: SocketAddr, connections: usize, every: Duration) -> Trickling {
        let mut sockets: Vec<TcpStream> =
            (0..connections).map(|_| TcpStream::connect(addr).unwrap()).collect();
        for socket in &sockets {
            socket.set_nonblocking(true).unwrap();
        }
        let open = Arc::new(Mutex::new(connections));
        let counted = open.clone();
        thread::spawn(move || {
            let head = b"GET /metrics HTTP/1.1\r\nX-Slow: ";
            for byte in head.iter().chain(std::iter::repeat(&b'a')) {
                // A socket the listener closed reads its end (or a reset).
                sockets.retain_mut(|socket| {
                    let mut buffer = [0u8; 64];
                    let closed = !matches!(
                        socket.read(&mut buffer),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
                    );
                    !closed && socket.write_all(&[*byte]).is_ok()
                });
                *counted.lock().unwrap() = sockets.len();
                if sockets.is_empty() {
                    return;
                }
                thread::sleep(every);
            }
        });
        Trickling { open }
    }

    fn open(&self) -> usize {
        *self.open.lock().unwrap()
    }
}

/// An address that cannot be listened on is a setup error in one line,
/// before anything else: here the target does not even exist, and the
/// error is about the metrics.
#[test]
fn a_bad_metrics_address_stops_pace_before_the_run() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap();
    let nowhere = format!("http://127.0.0.1:{}/", free_port());
    let run = pace(&["--metrics", &taken.to_string(), &nowhere], LIMIT);
    run.assert_code(2);
    assert_eq!(
        run.stderr,
        format!("pace: cannot listen on --metrics {taken}: Address already in use\n"),
        "{run}"
    );
    assert_eq!(run.stdout, "");
    let run = pace(&["--metrics", "9464", &nowhere], LIMIT);
    run.assert_code(1);
    assert!(run.stderr.contains("'9464' is not HOST:PORT"), "{run}");
}
