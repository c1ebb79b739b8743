//! Arrival plans seen from the server's side: Poisson arrivals look
//! exponential, stages give the rates they name, a warm-up is sent but not
//! counted, and the seed is printed so a run can be repeated.

#[path = "common/arrivals.rs"]
mod arrivals;
mod common;

use std::time::Duration;

use arrivals::ArrivalServer;
use common::{load_lock, pace, Report};

const LIMIT: Duration = Duration::from_secs(20);

/// The gaps between consecutive arrivals, in seconds.
fn gaps(arrivals: &[f64]) -> Vec<f64> {
    arrivals.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The shares of gaps over twice the mean and under a fifth of it.
fn shape(gaps: &[f64]) -> (f64, f64) {
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let share = |keep: &dyn Fn(f64) -> bool| {
        gaps.iter().filter(|&&g| keep(g)).count() as f64 / gaps.len() as f64
    };
    (share(&|g| g > 2.0 * mean), share(&|g| g < mean / 5.0))
}

/// Poisson arrivals have exponential gaps: e^-2 = 13.5% of them are over
/// twice the mean and 1 - e^-0.2 = 18% under a fifth of it; evenly spaced
/// arrivals have neither. About 4000 gaps: the shares' spread is under a
/// percentage point. A machine busy elsewhere delays some sends, which
/// bunches them: more short gaps, few long ones (a long gap shortens only
/// by a delay comparable to the mean gap, 500 us). So the long gaps carry
/// the check, and the short ones are bounded from below only.
#[test]
fn poisson_gaps_look_exponential_on_the_server() {
    let _load = load_lock();
    let server = ArrivalServer::start();
    let url = server.url();
    let run = pace(&["-t2", "-c16", "-d2s", "-R2000", "--arrival", "poisson", &url], LIMIT);
    run.assert_ok();
    let arrivals = server.arrivals();
    // A Poisson count: 4000 on average, standard deviation 63.
    assert!((3_600..=4_400).contains(&arrivals.len()), "{} arrivals\n{run}", arrivals.len());
    let (poisson_long, short) = shape(&gaps(&arrivals));
    assert!(
        (0.09..=0.19).contains(&poisson_long),
        "{poisson_long} of the gaps over twice the mean\n{run}"
    );
    assert!(short >= 0.12, "{short} of the gaps under mean/5\n{run}");
    drop(server);

    let server = ArrivalServer::start();
    let url = server.url();
    let run = pace(&["-t2", "-c16", "-d2s", "-R2000", &url], LIMIT);
    run.assert_ok();
    // Long gaps in an even plan come only from stalls of the machine (each
    // makes one): a few percent on a machine loaded to 3 runnable threads
    // per core, far from the Poisson run's share on the same machine.
    let (long, _) = shape(&gaps(&server.arrivals()));
    assert!(
        long < 0.07 && long < poisson_long / 2.0,
        "even plan: {long} of the gaps over twice the mean (Poisson: {poisson_long})\n{run}"
    );
}

/// `-R100 --stages 1s:100,1s:500,1s:500`: 100/s for a second, a ramp to
/// 500/s (300 requests), then 500/s: the server counts them per second.
#[test]
fn stages_give_their_rates() {
    let _load = load_lock();
    let server = ArrivalServer::start();
    let url = server.url();
    let run = pace(&["-t2", "-c16", "-R100", "--stages", "1s:100,1s:500,1s:500", &url], LIMIT);
    run.assert_ok();
    let arrivals = server.arrivals();
    let per_second: Vec<usize> = (0..3)
        .map(|s| arrivals.iter().filter(|&&t| t >= s as f64 && t < s as f64 + 1.0).count())
        .collect();
    for (got, want) in per_second.iter().zip([100.0, 300.0, 500.0]) {
        assert!((*got as f64 - want).abs() <= 0.1 * want + 5.0, "{per_second:?}\n{run}");
    }
    assert!(run.stdout.contains("Stages:"), "{run}");
    let report = Report::new(&run.stdout);
    assert!((880..=900).contains(&report.requests()), "{run}");
}

/// A warm-up is sent as usual but not counted: the server gets both parts,
/// the report only the measured one, and says what the warm-up sent.
#[test]
fn the_warmup_reaches_the_server_but_not_the_report() {
    let _load = load_lock();
    let server = ArrivalServer::start();
    let url = server.url();
    let run = pace(&["-t1", "-c4", "-d1s", "--warmup", "1s", "-R200", &url], LIMIT);
    run.assert_ok();
    let served = server.arrivals().len();
    let counted = Report::new(&run.stdout).requests();
    assert!((395..=400).contains(&served), "the server got {served}\n{run}");
    assert!((196..=200).contains(&counted), "the report counts {counted}\n{run}");
    let warmup = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Warm-up: 1s before the run: "))
        .unwrap_or_else(|| panic!("no warm-up line\n{run}"));
    let sent: usize = warmup.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(sent + counted as usize, served, "{run}");
    assert!(run.stdout.contains("  after a 1s warm-up (sent, not counted)"), "{run}");
}

/// Without --seed a random one is chosen and printed; with it, it is used.
#[test]
fn the_seed_is_printed_and_taken() {
    let _load = load_lock();
    let server = ArrivalServer::start();
    let url = server.url();
    let run = pace(&["-t1", "-c2", "-d200ms", "-R100", "--arrival", "poisson", &url], LIMIT);
    run.assert_ok();
    let seed: u64 = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("  Poisson arrivals (seed "))
        .and_then(|rest| rest.split(';').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no seed in the header\n{run}"));
    let again = pace(
        &[
            "-t1",
            "-c2",
            "-d200ms",
            "-R100",
            "--arrival",
            "poisson",
            "--seed",
            &seed.to_string(),
            &url,
        ],
        LIMIT,
    );
    again.assert_ok();
    assert!(again.stdout.contains(&format!("(seed {seed};")), "{again}");
}

#[test]
fn plan_options_that_cannot_work_are_usage_errors() {
    for (args, message) in [
        (&["--arrival", "poisson"][..], "needs a rate"),
        (&["-d2s", "--stages", "1s:10"], "disagrees with --stages"),
        (&["--stages", "1s:0"], "send nothing"),
        (&["--stages", "1s"], "expected DURATION:RATE"),
        (&["--arrival", "bursty", "-R1"], "not 'constant' or 'poisson'"),
    ] {
        let mut args = args.to_vec();
        args.push("http://127.0.0.1:9/");
        let run = pace(&args, LIMIT);
        run.assert_code(1);
        assert!(run.stderr.contains(message), "{args:?}\n{run}");
    }
}
