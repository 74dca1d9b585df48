//! What a move's records are about (`MoveId`): the key and file name that the same command
//! between the same clusters finds again, and a new move's own ID.

/// What a move's records are about: its two clusters (each by URL and by the UID of its
/// `kube-system` namespace, which is fixed for the cluster's life), the namespace and the named
/// Clusters. The same command between the same clusters finds the same records; a cluster
/// recreated at the same address does not inherit them.
#[derive(Debug, Clone, Copy)]
pub struct MoveId<'a> {
    pub source: &'a str,
    pub source_uid: &'a str,
    pub target: &'a str,
    pub target_uid: &'a str,
    /// `None`: all namespaces.
    pub namespace: Option<&'a str>,
    pub clusters: &'a [String],
    /// `-l`: the Clusters' label selector.
    pub selector: Option<&'a str>,
}

impl MoveId<'_> {
    /// What was asked, whichever clusters: the namespace, the named Clusters (in any order), the
    /// selector (absent without one, so that moves without a selector keep their keys).
    fn selection(&self) -> String {
        let mut names = self.clusters.to_vec();
        names.sort();
        let mut text = format!("{}\n{}", self.namespace.unwrap_or("*"), names.join(","));
        if let Some(selector) = self.selector {
            text.push_str(&format!("\n-l {selector}"));
        }
        text
    }

    fn selection_key(&self) -> String {
        format!("{:016x}", fnv1a(self.selection().as_bytes()))
    }

    fn identities_key(&self) -> String {
        let identities = format!("{}\n{}", self.source_uid, self.target_uid);
        format!("{:016x}", fnv1a(identities.as_bytes()))
    }

    /// The part of the key older versions derived from the addresses (they keyed records by the
    /// URLs the clusters were reached through).
    pub fn address_key(&self) -> String {
        let key = format!("{}\n{}\n{}", self.source, self.target, self.selection());
        format!("{:016x}", fnv1a(key.as_bytes()))
    }

    /// This move's key: what was asked between these two clusters, by their `kube-system` UIDs —
    /// whatever URLs reach them, so a move interrupted through one address is continued through
    /// another.
    pub fn key(&self) -> String {
        format!("{}-{}", self.selection_key(), self.identities_key())
    }

    /// The key an older version gave the same move (by the addresses as well).
    pub fn legacy_key(&self) -> String {
        format!("{}-{}", self.address_key(), self.identities_key())
    }

    /// Whether a key is of a move with this selection (between any clusters), in this version's
    /// keys or in an older version's at these addresses.
    pub fn same_selection(&self, key: &str) -> bool {
        let starts = |prefix: String| {
            key == prefix
                || key
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
        };
        starts(self.selection_key()) || starts(self.address_key())
    }

    /// The beginnings of the file names of this selection's journals between any clusters (and
    /// an older version's at these addresses).
    pub fn file_prefixes(&self) -> [String; 2] {
        let namespace = self.namespace.unwrap_or("all-namespaces");
        [
            format!("move-{namespace}-{}-", self.selection_key()),
            format!("move-{namespace}-{}", self.address_key()),
        ]
    }

    /// The file name of this move's journal.
    pub fn file_name(&self) -> String {
        format!(
            "move-{}-{}.json",
            self.namespace.unwrap_or("all-namespaces"),
            self.key()
        )
    }

    /// The file name an older version gave this move's journal.
    pub fn legacy_file_name(&self) -> String {
        format!(
            "move-{}-{}.json",
            self.namespace.unwrap_or("all-namespaces"),
            self.legacy_key()
        )
    }
}

/// A new move's ID: random, so that no other move (from this machine or another) has it.
pub fn new_move_id() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// 64-bit FNV-1a: a stable name for the same move across runs and builds.
pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
