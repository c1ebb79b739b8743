//! pace's commands as `-h`, the man page and the completions describe
//! them: each one's words, options (its parser's table) and operands. A
//! new command is one more entry in [`subcommands`] (and its parser in
//! `cli::parse`); a new option, one more entry in its command's table.

use super::options::{Described, Kind, Spec, HELP_ONLY};
use super::{bench, compare, merge, search, serve};

/// The shells `pace completions` writes a script for.
pub(super) const SHELLS: &[&str] = &["bash", "zsh", "fish"];

/// One command, for the texts that describe it.
pub(super) struct CommandDoc {
    /// The word that selects it after `pace`; empty for the benchmark,
    /// which has none.
    pub name: &'static str,
    /// What follows `pace NAME` on its usage line.
    pub usage: &'static str,
    /// What it does, in the command list of `pace -h`.
    pub summary: &'static [&'static str],
    /// The paragraph its own `-h` begins with (may be empty).
    pub about: &'static [&'static str],
    /// Its options, in the order of its table.
    pub options: Vec<Described>,
    /// What its words that are not options are, if it takes any.
    pub operands: Option<Kind>,
    /// Lines its `-h` ends with (the units values may have).
    pub notes: &'static [&'static str],
    /// The width of the names column in its `-h` (indent included): the
    /// descriptions start two spaces after it.
    pub column: usize,
}

impl CommandDoc {
    /// `pace serve <options>`.
    pub fn synopsis(&self) -> String {
        let words = ["pace", self.name, self.usage];
        words.iter().filter(|word| !word.is_empty()).copied().collect::<Vec<_>>().join(" ")
    }
}

fn described<F: Copy>(specs: &[Spec<F>]) -> Vec<Described> {
    specs.iter().map(Spec::described).collect()
}

/// `pace <options> <url>`: wrk's command line.
pub(super) fn benchmark() -> CommandDoc {
    CommandDoc {
        name: "",
        usage: "<options> <url> [script args...]",
        summary: &["Benchmark a URL"],
        about: &[],
        options: described(bench::SPECS),
        operands: Some(Kind::Text),
        notes: &[
            "Numeric arguments may include a SI unit (1k, 1M, 1G)",
            "Time arguments may include a time unit (2s, 2m, 2h)",
            "Fractions and sub-second times work too (-R 0.5, -d 500ms)",
        ],
        column: 29,
    }
}

/// The commands named by a first word, in the order help lists them.
pub(super) fn subcommands() -> Vec<CommandDoc> {
    vec![
        CommandDoc {
            name: "serve",
            usage: "<options>",
            summary: &["Run the built-in target server (pace serve -h)"],
            about: &[],
            options: described(serve::SERVE_SPECS),
            operands: None,
            notes: &[
                "Numeric arguments may include a SI unit (1k, 1M, 1G)",
                "Time arguments may include a time unit (500ms, 2s, 2m, 2h)",
            ],
            column: 26,
        },
        CommandDoc {
            name: "demo",
            usage: "[--http2 | --http3]",
            summary: &[
                "Benchmark the built-in server with a stall:",
                "corrected vs uncorrected latency, no setup",
            ],
            about: &[
                "Starts the built-in server on a free loopback port with an injected",
                "stall, benchmarks it at a fixed rate for a few seconds and prints the",
                "corrected and uncorrected latency side by side: what coordinated",
                "omission hides. Needs no network access and no other setup.",
            ],
            options: described(serve::DEMO_SPECS),
            operands: None,
            notes: &[],
            column: 25,
        },
        CommandDoc {
            name: "search",
            usage: "<options> <url>",
            summary: &["Find the highest rate a service holds", "within its SLOs (pace search -h)"],
            about: &[
                "Finds the highest rate the service holds within the objectives of",
                "--slo: steps of paced load (each -d long after a --warmup of its own,",
                "2s by default) rising from --from until one fails, then narrowing",
                "between the last that held and the first that failed to --resolution.",
                "A step holds when every objective is met and it was stationary:",
                "latency and requests in flight did not keep growing through its",
                "periods. A step pace itself could not offer is not the service's",
                "failure: connections too few are grown (up to --max-connections),",
                "and a generator short of CPU ends the search, said in words.",
                "Prints a row per step and the answer (\"holds N requests/s within",
                "...\"); -e writes JSON Lines (each step a report pace report,",
                "compare and merge read with --step N), --html the latency against",
                "the throughput. Exit 0 when a rate was found, 4 when even the first",
                "step failed or the rate is below --min-rate.",
            ],
            options: search::described(),
            operands: Some(Kind::Text),
            notes: &[
                "Numeric arguments may include a SI unit (1k, 1M, 1G)",
                "Time arguments may include a time unit (2s, 2m, 2h)",
            ],
            column: 29,
        },
        CommandDoc {
            name: "merge",
            usage: "<options> <file>...",
            summary: &[
                "Report saved runs (-e, --hlog) as one, e.g.",
                "the shards of a plan (pace merge -h)",
            ],
            about: &[
                "Reports several saved runs as one: the shards of one plan (--shard)",
                "sent from several machines, or unrelated runs. Each file is what",
                "pace -e wrote (JSON, or JSON Lines with -p), or an --hlog log.",
                "Latency histograms are added count by count (exact), counts and bytes",
                "summed, rates taken over the union of the runs' time windows.",
            ],
            options: described(merge::MERGE_SPECS),
            operands: Some(Kind::File),
            notes: &[],
            column: 29,
        },
        CommandDoc {
            name: "report",
            usage: "<options> <file>",
            summary: &["Report a run saved with -e again, as text", "or HTML (pace report -h)"],
            about: &[
                "Reports a run saved with pace -e (JSON, or JSON Lines with -p) again:",
                "the text report on stdout and, with --html, the HTML report. The",
                "figures are computed from the saved histograms, so any percentile can",
                "be asked for afterwards. Charts over time need the periods of -p.",
            ],
            options: described(merge::REPORT_SPECS),
            operands: Some(Kind::File),
            notes: &[],
            column: 29,
        },
        CommandDoc {
            name: "compare",
            usage: "<options> <base> <new>",
            summary: &[
                "Compare two saved runs: faster, slower or",
                "within noise (pace compare -h)",
            ],
            about: &[
                "Compares two runs saved with pace -e (or merged with pace merge): the",
                "rate, the errors and the latency at each percentile of both, the",
                "difference, and a verdict per line: faster, slower or within noise.",
                "A difference is faster or slower when it is outside its 99% interval",
                "(a bootstrap over the runs' histograms, and over their -p periods when",
                "both have 5 or more) and at least --noise.",
                "--max-regression L fails (exit 4) when NEW is worse than BASE by more",
                "than a limit, noise or not: metric:amount, with --slo's metrics (pN,",
                "u.pN, lag.pN, mean, stdev, max, rate, requests, errors) and an amount",
                "that is a share of BASE (p99:+10%, rate:-2%) or a figure (p50:+1ms,",
                "rate:-100, errors:+10). The manual (pace man) says more.",
            ],
            options: described(compare::COMPARE_SPECS),
            operands: Some(Kind::File),
            notes: &[],
            column: 29,
        },
        CommandDoc {
            name: "completions",
            usage: "bash|zsh|fish",
            summary: &[
                "Print a shell's completion script (bash,",
                "zsh or fish; pace completions -h)",
            ],
            about: &[
                "Prints the completion script of bash, zsh or fish on stdout, made from",
                "the option tables pace -h is made from. To install it for yourself:",
                "  pace completions bash > ~/.local/share/bash-completion/completions/pace",
                "  pace completions zsh > ~/.zfunc/_pace   # a directory in $fpath",
                "  pace completions fish > ~/.config/fish/completions/pace.fish",
            ],
            options: described(HELP_ONLY),
            operands: Some(Kind::Choice(SHELLS)),
            notes: &[],
            column: 25,
        },
        CommandDoc {
            name: "man",
            usage: "",
            summary: &["Print the manual page (roff): pace man | man -l -"],
            about: &[
                "Prints pace's manual page (roff) on stdout, made from the option",
                "tables pace -h is made from. Read it with pace man | man -l -, or",
                "install it: pace man > /usr/local/share/man/man1/pace.1",
            ],
            options: described(HELP_ONLY),
            operands: None,
            notes: &[],
            column: 25,
        },
        CommandDoc {
            name: "help",
            usage: "[command]",
            summary: &["Print this help, or a command's (as -h)"],
            about: &["Prints the help of pace, or of one of its commands."],
            options: described(HELP_ONLY),
            operands: Some(Kind::Command),
            notes: &[],
            column: 25,
        },
    ]
}

/// Every command: the benchmark first (it has no word), then the others.
pub(super) fn all() -> Vec<CommandDoc> {
    std::iter::once(benchmark()).chain(subcommands()).collect()
}

/// The command `name` selects.
pub(super) fn find(name: &str) -> Option<CommandDoc> {
    subcommands().into_iter().find(|command| command.name == name)
}

/// Their names, for messages: `serve, demo, ...`.
pub(super) fn names() -> String {
    subcommands().iter().map(|command| command.name).collect::<Vec<_>>().join(", ")
}
