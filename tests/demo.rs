//! `pace demo`: ten seconds against the built-in server with a 1 s freeze,
//! both latency views and the explanation, with no setup.

mod common;

use std::time::Duration;

use common::{assert_monotonic, load_lock, pace, Block};

#[test]
fn demo_shows_coordinated_omission() {
    demo(&["demo"]);
}

/// The same over HTTP/2: the built-in server speaks it too.
#[test]
fn demo_over_http2() {
    let stdout = demo(&["demo", "--http2"]);
    assert!(stdout.contains("\n  HTTP/2 (h2c, prior knowledge), 1 stream per connection\n"));
}

/// The same over HTTP/3: the built-in server answers QUIC on its port.
#[test]
fn demo_over_http3() {
    let stdout = demo(&["demo", "--http3"]);
    assert!(stdout.contains("\n  HTTP/3 (h3, over QUIC), 1 stream per connection\n"));
    assert!(stdout.contains("\n  QUIC: 50 connections, "));
}

/// Runs the demo with `args` and checks what it shows; returns its stdout.
fn demo(args: &[&str]) -> String {
    let _load = load_lock();
    let run = pace(args, Duration::from_secs(30));
    run.assert_ok();
    // HTTP/3 is https (QUIC carries TLS).
    let scheme = if args.contains(&"--http3") { "https" } else { "http" };
    let listens = format!("pace demo: the built-in server listens on {scheme}://127.0.0.1:");
    assert!(run.stderr.contains(&listens), "{run}");
    let report = run.report();
    let running = format!("Running 10s test @ {scheme}://127.0.0.1:");
    assert!(run.stdout.starts_with(&running), "{run}");
    assert!(run.stdout.contains("\n  2 threads and 50 connections\n"), "{run}");
    assert_monotonic(&report, Block::Recorded);
    assert_monotonic(&report, Block::Uncorrected);
    let corrected_p99 = report.latency_us(Block::Recorded, 99.0) / 1e6;
    let uncorrected_p99 = report.latency_us(Block::Uncorrected, 99.0) / 1e6;
    let requests = report.requests();
    assert!((19_000..=20_200).contains(&requests), "{requests} requests, planned 20000\n{run}");
    // The model of tests/coordinated_omission.rs: at 2000/s (D = N / 2000
    // seconds) with a freeze of F = 1 s, the top 1% of the requests are
    // the first to fall due in the freeze, which waited F - 0.01 D (0.9 s)
    // to F for its end (more room above, for a server waking up late).
    let f = 1.0;
    let duration = requests as f64 / 2000.0;
    let (low, high) = (f - 0.01 * duration - 0.05, f + 0.15);
    assert!(
        (low..=high).contains(&corrected_p99),
        "corrected p99 {corrected_p99:.3} s, expected {low:.3}..{high:.3} s\n{run}"
    );
    // The uncorrected view hides the freeze: its top 1% are normal latencies.
    assert!(uncorrected_p99 < f / 4.0, "uncorrected p99 {uncorrected_p99:.3} s\n{run}");
    assert!(report.schedule_lag().is_some(), "{run}");
    // The freeze is named as the cause of the late sends.
    let warnings = report.warnings();
    assert!(warnings.iter().any(|w| w.ends_with(" [server_stalled]")), "{run}");
    assert!(!warnings.iter().any(|w| w.contains("too_few_connections")), "{run}");

    let explanation = run
        .stdout
        .split_once("\nWhy the two distributions differ\n")
        .unwrap_or_else(|| panic!("no explanation after the report\n{run}"))
        .1;
    assert!(explanation.contains("  p99:  corrected "), "{run}");
    assert!(explanation.contains("coordinated omission"), "{run}");
    assert!(explanation.contains("The server froze for 1 s"), "{run}");
    run.stdout.clone()
}
