//! The journal of a running move and where it is kept: its local file and its copy in the
//! source cluster, saved together at every step.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::Semaphore;

use crate::error::Result;
use crate::kube::Cluster;
use crate::mover::journal::document::{Journal, Stage};
use crate::mover::journal::local::save_off_the_runtime;

/// The journal of a running move and where it is kept: a local file, and a copy in the source
/// cluster (removed once the move is over).
pub struct JournalFile {
    pub path: std::path::PathBuf,
    pub journal: Journal,
    pub copy: Option<JournalCopy>,
}

/// Where the journal's copy lives in the source cluster.
pub struct JournalCopy {
    pub cluster: Cluster,
    pub namespace: String,
    pub key: String,
    /// The slices this process last wrote (`None`: not saved yet).
    pub written: Option<crate::mover::journal::copy::Written>,
    /// Slices written at once (`--concurrency`).
    pub concurrency: usize,
    /// A `--to-cluster` move's kubeconfig of its target, kept beside the copy while it runs.
    pub kept: Option<crate::mover::journal::kept::Kept>,
}

impl JournalFile {
    /// The write gate of the cluster that holds the journal's copy: the move's lease there.
    fn gate(&self) -> Option<crate::kube::gate::WriteGate> {
        self.copy.as_ref().map(|copy| copy.cluster.gate.clone())
    }

    pub async fn save(&mut self) -> Result<()> {
        let slots = self.copy.as_ref().map_or(1, |c| c.concurrency);
        self.save_within(slots).await
    }

    /// [`save`](Self::save) with at most `slots` writes in flight (what `--concurrency` leaves
    /// free while other writes are in flight).
    pub async fn save_within(&mut self, slots: usize) -> Result<()> {
        self.save_with(&Semaphore::new(slots.max(1))).await
    }

    /// [`save`](Self::save), each write of the copy holding one of `slots`' permits.
    async fn save_with(&mut self, slots: &Semaphore) -> Result<()> {
        if self.journal.stage.finished() {
            // A finished move leaves a short record (so a rerun can say it finished) and no
            // copy in the cluster.
            let record = self.journal.finished_record().to_json();
            save_off_the_runtime(vec![record].into(), &self.path, self.gate()).await?;
            if let Some(copy) = &mut self.copy {
                crate::mover::journal::copy::remove(&copy.cluster, &copy.namespace, &copy.key)
                    .await?;
                copy.written = Some(Vec::new());
                if let Some(kept) = &copy.kept {
                    kept.release(&copy.cluster).await?;
                }
            }
            return Ok(());
        }
        // Serialised once for both places; the local file first, so that it is never behind
        // the copy.
        let slices: std::sync::Arc<[String]> =
            crate::mover::journal::copy::shards(self.journal.to_json_pieces()).into();
        save_off_the_runtime(slices.clone(), &self.path, self.gate()).await?;
        if let Some(copy) = &mut self.copy {
            copy.written = Some(
                crate::mover::journal::copy::save(
                    &copy.cluster,
                    &copy.namespace,
                    &copy.key,
                    &slices,
                    (copy.written.as_ref(), slots),
                )
                .await?,
            );
        }
        Ok(())
    }

    /// Saves while writes are in flight: the save takes a free slot of `concurrency` (waiting for
    /// one if none is), and each slot freed by an answer that arrives meanwhile (kept in
    /// `answers`, to be taken in after it): no more than `concurrency` writes are ever in flight,
    /// and none of them idle while the journal is saved.
    pub async fn save_alongside<F: Future>(
        &mut self,
        concurrency: usize,
        in_flight: &mut FuturesUnordered<F>,
        answers: &mut Vec<F::Output>,
    ) -> Result<()> {
        while in_flight.len() >= concurrency.max(1) {
            match in_flight.next().await {
                Some(answer) => answers.push(answer),
                None => break,
            }
        }
        let slots = Semaphore::new(concurrency.max(1) - in_flight.len());
        let save = self.save_with(&slots);
        tokio::pin!(save);
        loop {
            tokio::select! {
                saved = &mut save => return saved,
                Some(answer) = in_flight.next(), if !in_flight.is_empty() => {
                    answers.push(answer);
                    slots.add_permits(1);
                }
            }
        }
    }

    pub async fn stage(&mut self, stage: Stage) -> Result<()> {
        self.journal.stage = stage;
        self.save().await
    }
}
