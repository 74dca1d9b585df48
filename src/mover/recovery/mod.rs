//! What earlier runs of a move recorded, and acting on it: which record a rerun, `--resume` or
//! `--rollback` trusts, journals of other moves set aside, and the moves a snapshot shows
//! unfinished (`records`); a move finished or rolled back from its journal alone (`replay`).

mod records;
mod replay;

pub use records::{
    Elsewhere, Recorded, Records, originals_gone, recorded, set_aside_foreign, unfinished_moves,
};
pub use replay::{Replay, finish_from_journal, rollback_from_journal};
