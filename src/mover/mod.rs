//! `kubectl capi move`: clusterctl's object graph, order and checks, with every check before the
//! first write. The graph and the plan are pure (`graph/`); the checks (`checks/`), the writes
//! (`write/`), the journal (`journal/`), the two ends (`ends/`) and `--to-directory`/
//! `--from-directory` (`backup/`) are the shell around them; the files here tell the command's
//! story (`story`), one move and its steps in order (`move_once`, `steps/`), what earlier runs
//! recorded (`recovery`) and what it reports (`report`, from what was asked: `request`).

pub mod addressing;
pub mod backup;
pub mod checks;
pub mod ends;
pub mod graph;
pub mod journal;
pub mod move_once;
pub mod progress;
pub mod recovery;
pub mod report;
pub mod request;
pub mod steps;
pub mod story;
pub mod write;

pub(crate) use story::{Around, run};
