//! "Did you mean": the option name nearest to an unknown one
//! (`--duraton` -> `--duration`), suggested only when it is close.
//!
//! Close is a few edits (a letter missing, added, changed, or two letters
//! swapped: Damerau's operations), fewer for short names, with one winner.
//! A typo in an abbreviation (`--conect`) is close to a prefix of the
//! name, so long enough typed names are also compared with the name's
//! prefixes of about their length. A name the typed one is close to as a
//! whole is nearer than one it is as close to only by a prefix: `--targts`
//! is `--targets`, not `--targets-order`.

/// The name in `names` nearest to `typed`, if it is close and nearer than
/// any other (a tie suggests nothing rather than a guess).
pub(super) fn nearest<'a>(
    typed: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(Closeness, &str)> = None;
    let mut tied = false;
    for name in names {
        let Some(closeness) = closeness(typed, name) else { continue };
        match best {
            Some((nearest, other)) if closeness == nearest && other != name => tied = true,
            Some((nearest, _)) if closeness >= nearest => {}
            _ => {
                best = Some((closeness, name));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, name)| name)
}

/// How close a typed name is to an option's: the fewer edits the closer,
/// and at equal edits the whole name before a prefix of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Closeness {
    edits: usize,
    by_prefix: bool,
}

/// How far `typed` is from `name` when it is close enough to suggest it.
fn closeness(typed: &str, name: &str) -> Option<Closeness> {
    let typed: Vec<char> = typed.chars().collect();
    let name: Vec<char> = name.chars().collect();
    // One edit in a 3 to 5 letter name, two from 6 letters on: `--ur`
    // is nothing like `--url`'s neighbours, `--duraton` is `--duration`.
    let allowed = match typed.len() {
        0..=2 => return None,
        3..=5 => 1,
        _ => 2,
    };
    let whole = distance(&typed, &name);
    // A mistyped abbreviation: one edit from a prefix of the name.
    let prefix = (typed.len() >= 5)
        .then(|| {
            (typed.len() - 1..=typed.len() + 1)
                .filter(|&length| length < name.len())
                .map(|length| distance(&typed, &name[..length]))
                .min()
        })
        .flatten()
        .filter(|&edits| edits <= 1);
    let whole = Some(whole).filter(|&edits| edits <= allowed);
    let whole = whole.map(|edits| Closeness { edits, by_prefix: false });
    let prefix = prefix.map(|edits| Closeness { edits, by_prefix: true });
    whole.into_iter().chain(prefix).min()
}

/// The optimal string alignment distance: insertions, deletions,
/// substitutions and swaps of two adjacent letters.
fn distance(a: &[char], b: &[char]) -> usize {
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitution = usize::from(a[i - 1] != b[j - 1]);
            let mut best =
                (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + substitution);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &[
        "connections",
        "duration",
        "threads",
        "timeout",
        "u_latency",
        "latency",
        "report_interval",
        "stall-at",
        "stall-for",
        "port",
        "tls",
        "targets",
        "targets-order",
        "metrics",
        "metrics-linger",
        "metrics-push",
    ];

    fn suggested(typed: &str) -> Option<&'static str> {
        nearest(typed, NAMES.iter().copied())
    }

    #[test]
    fn close_typos_suggest_the_name() {
        assert_eq!(suggested("duraton"), Some("duration"));
        assert_eq!(suggested("durations"), Some("duration"));
        assert_eq!(suggested("conections"), Some("connections"));
        assert_eq!(suggested("tiemout"), Some("timeout"), "two letters swapped");
        assert_eq!(suggested("u-latency"), Some("u_latency"));
        assert_eq!(suggested("report-interval"), Some("report_interval"));
        assert_eq!(suggested("prot"), Some("port"));
        assert_eq!(suggested("conect"), Some("connections"), "a mistyped abbreviation");
        assert_eq!(suggested("threds"), Some("threads"));
    }

    /// A typo of a name that also starts a longer one: as near the longer
    /// one's prefix as the whole name, which wins.
    #[test]
    fn the_whole_name_beats_a_longer_name_with_it_as_prefix() {
        assert_eq!(suggested("targts"), Some("targets"));
        assert_eq!(suggested("tragets"), Some("targets"));
        assert_eq!(suggested("metircs"), Some("metrics"));
        assert_eq!(suggested("metics"), Some("metrics"));
        assert_eq!(suggested("targets-ordr"), Some("targets-order"));
        assert_eq!(suggested("metrics-pus"), Some("metrics-push"));
    }

    /// The same on the benchmark's own table.
    #[test]
    fn typos_of_the_benchmarks_options() {
        let names = || super::super::bench::SPECS.iter().map(|spec| spec.long);
        assert_eq!(nearest("targts", names()), Some("targets"));
        assert_eq!(nearest("metircs", names()), Some("metrics"));
        assert_eq!(nearest("duraton", names()), Some("duration"));
    }

    #[test]
    fn far_short_or_tied_names_suggest_nothing() {
        assert_eq!(suggested("foo"), None);
        assert_eq!(suggested("rate"), None);
        assert_eq!(suggested("xyzzy"), None);
        assert_eq!(suggested("ls"), None, "too short to guess");
        assert_eq!(suggested("_latency"), None, "as near --latency as --u_latency");
    }

    #[test]
    fn distances() {
        let d = |a: &str, b: &str| {
            distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>())
        };
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("abc", "abc"), 0);
        assert_eq!(d("abc", "acb"), 1);
        assert_eq!(d("kitten", "sitting"), 3);
    }
}
