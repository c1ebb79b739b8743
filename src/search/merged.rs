//! `pace merge` of the files of ladders (`pace search --ladder -e`, one
//! per shard): step N of every file added into step N of the whole (see
//! [`crate::merge`]'s combination: histograms count by count, periods
//! period by period), each merged step judged as a live one is (the
//! objectives of `pace merge --slo`, stationarity over the merged
//! periods, pace's own schedule), and the whole reported as the search
//! would have: a row per step and the answer.

use std::io::{self, Write};

use super::answer::Answer;
use super::climb::Climb;
use super::step::Step;
use super::{html, json, text, Setup};
use crate::error::Error;
use crate::merge::combine::combine;
use crate::merge::saved::{read_steps, SavedRun};
use crate::merge::{open_page, write_out, MergeArgs};
use crate::outfile::write_error;
use crate::plan::Arrival;
use crate::provenance::masked_url;

/// Whether `args` asks to merge the files of ladders: no `--step`, and the
/// first file is a search's.
pub fn asked(args: &MergeArgs) -> bool {
    args.step.is_none()
        && (args.files.first()).is_some_and(|file| read_steps(file).is_ok_and(|s| !s.is_empty()))
}

/// Runs `pace merge` of the files of ladders, step by step; returns the
/// exit code.
pub fn run(args: &MergeArgs) -> Result<i32, Error> {
    let (setup, steps, notes) = merge(args).map_err(Error::Setup)?;
    let page = open_page(args)?;
    for note in &notes {
        eprintln!("pace merge: {note}");
    }
    let answer = Answer::of(&setup, &steps, None);
    write_out(args, |out| write(out, &setup, &steps, &answer, args.outputs.json, &args.report))?;
    if let Some(mut page) = page {
        let path = page.path().to_path_buf();
        html::write(page.writer(), &setup, &steps, &answer).map_err(|e| write_error(&path, e))?;
        page.commit().map_err(|e| write_error(&path, e))?;
    }
    Ok(answer.code)
}

/// The merged steps of the ladders in `args.files` (each a search's file
/// with as many steps as the others), and what the reports say of them.
fn merge(args: &MergeArgs) -> Result<(Setup, Vec<Step>, Vec<String>), String> {
    let ladders: Vec<Vec<SavedRun>> =
        args.files.iter().map(|path| read_steps(path)).collect::<Result<_, _>>()?;
    let count = ladders[0].len();
    if let Some((i, other)) = ladders.iter().enumerate().find(|(_, l)| l.len() != count) {
        return Err(format!(
            "{} has {count} steps and {} has {}: merge the files of one ladder",
            args.files[0].display(),
            args.files[i].display(),
            other.len()
        ));
    }
    let mut notes = Vec::new();
    let mut steps = Vec::with_capacity(count);
    let mut ladders: Vec<_> = ladders.into_iter().map(Vec::into_iter).collect();
    for index in 0..count {
        // Each ladder has `count` steps: every one gives its next.
        let runs: Vec<SavedRun> = ladders.iter_mut().filter_map(Iterator::next).collect();
        let merged = combine(&runs).map_err(|why| format!("step {}: {why}", index + 1))?;
        notes.extend(merged.notes.iter().map(|note| format!("step {}: {note}", index + 1)));
        steps.push(Step::judged(
            index + 1,
            merged.description,
            merged.result,
            merged.periods,
            &args.slo,
        ));
    }
    let first = &steps[0].run;
    let setup = Setup {
        url: masked_url(&first.url),
        objectives: args.slo.clone(),
        climb: Climb::Ladder(steps.iter().map(|s| s.rate).collect()),
        min_rate: None,
        max_connections: first.connections,
        step: first.duration.unwrap_or_default(),
        warmup: first.warmup,
        threads: first.threads,
        connections: first.connections,
        poisson: first.plan().is_some_and(|plan| plan.arrival == Arrival::Poisson),
    };
    Ok((setup, steps, notes))
}

/// The merged ladder as text, or with `json` as JSON Lines.
fn write(
    out: &mut dyn Write,
    setup: &Setup,
    steps: &[Step],
    answer: &Answer,
    json_lines: bool,
    options: &crate::report::ReportOptions,
) -> io::Result<()> {
    if json_lines {
        for step in steps {
            json::write_step(out, step, options)?;
        }
        return json::write_search(out, setup, steps, answer);
    }
    text::write_header(out, setup)?;
    for step in steps {
        text::write_step(out, step)?;
    }
    text::write_answer(out, answer)
}
