//! One end of a command, connected and discovered once: its client and what it serves, handed
//! to every step after instead of the flags that reach it.

use super::{catalog::Catalog, connect::Cluster, connect::connect};
use crate::error::Result;
use crate::settings::Connection;

/// A cluster a command works on: its client and its catalog (discovery and the CRD list).
#[derive(Clone)]
pub struct Connected {
    pub cluster: Cluster,
    pub catalog: Catalog,
}

impl Connected {
    /// Connects to `connection` and discovers what it serves.
    pub async fn open(connection: &Connection) -> Result<Connected> {
        let cluster = connect(connection).await?;
        let catalog = Catalog::discover(&cluster).await?;
        Ok(Connected { cluster, catalog })
    }
}
