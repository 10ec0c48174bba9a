//! What one experiment of the paper is: its runs, how they combine into points, its plots, the
//! numbers the paper states about it and the findings CI asserts. Each figure or table implements
//! [`Experiment`] in its own file under `experiments/`, so adding one touches that file and the
//! registry only.

use super::aggregate::{self, Combine, Point, Table};
use super::claims::{Check, Claim};
use super::jobs::{Job, Scale};
use super::plot::Chart;
use super::production::Production;
use super::store::Row;
use std::collections::BTreeMap;

/// What the runs are made from.
#[derive(Clone, Debug)]
pub struct Inputs {
    /// Sizes of the sweeps.
    pub scale: Scale,
    /// Production datasets given on the command line (none by default).
    pub production: Vec<Production>,
}

/// Points of every results folder that ran, by folder name.
#[derive(Clone, Debug, Default)]
pub struct Tables(pub BTreeMap<String, Table>);

impl Tables {
    /// The points of `folder`, if it ran.
    pub fn get(&self, folder: &str) -> Option<&Table> {
        self.0.get(folder)
    }
}

/// One figure or table of the paper.
pub trait Experiment: Sync {
    /// Its id: the `--only` name and its results folder.
    fn id(&self) -> &'static str;

    /// Its heading in REPORT.md.
    fn title(&self) -> &'static str;

    /// Results folders its runs write: its id, then any other (Table 9 keeps its production runs
    /// apart because they combine differently).
    fn folders(&self) -> &'static [&'static str];

    /// Whether it replays the production datasets (which are read only when some experiment does).
    fn uses_production(&self) -> bool {
        false
    }

    /// Its independent runs, in the order their rows are combined.
    fn jobs(&self, inputs: &Inputs) -> Vec<Job>;

    /// How the runs of `folder` combine: by default the mean over traces, as the paper averages ten.
    fn combine(&self, _folder: &str) -> Combine {
        Combine::Mean
    }

    /// The panels drawn for `folder`.
    fn charts(&self, folder: &str, t: &Table) -> Vec<Chart>;

    /// The numbers the paper states, read from this experiment's own folder.
    fn claims(&self) -> Vec<Claim>;

    /// Qualitative findings asserted on this experiment's own folder.
    fn checks(&self, _t: &Table) -> Vec<Check> {
        Vec::new()
    }

    /// What REPORT.md says when it did not run.
    fn not_run(&self) -> String {
        "Not run in this invocation (see `--only`).".into()
    }

    /// Extra REPORT.md text after its claims (e.g. a table of another folder).
    fn notes(&self, _tables: &Tables) -> String {
        String::new()
    }
}

/// Points of `rows` of `folder` as `e` combines them.
pub fn points(e: &dyn Experiment, folder: &str, rows: &[Row]) -> Vec<Point> {
    aggregate::points(rows, e.combine(folder))
}
