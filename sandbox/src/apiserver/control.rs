//! What tests steer and observe: the request log, injected faults, and the authorization policy.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng, rngs::StdRng};

/// One request as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    pub verb: String,
    pub group: String,
    /// The plural resource name (`clusters`), empty for non-resource paths.
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub code: u16,
    /// Whether the request was a dry run, as the server took it.
    pub dry_run: bool,
    /// Whether its query said `dryRun=All` (a DELETE with a body is real whatever this says).
    pub dry_run_query: bool,
    pub user: String,
    pub path: String,
    /// The API version the request addressed (`v1beta2`), empty for non-resource paths.
    pub version: String,
    /// The client's User-Agent (the sandbox's controllers send `capi-sandbox-controllers/…`).
    pub agent: String,
    /// A DELETE's `preconditions.uid`, so tests can see that a client names what it deletes.
    pub precondition_uid: Option<String>,
    /// A LIST that asked for metadata only (`PartialObjectMetadataList`).
    pub metadata_only: bool,
    /// When the request arrived and when its answer was decided, on one logical clock shared by
    /// all requests: which requests overlapped, and which finished before another began.
    pub started: u64,
    pub finished: u64,
    /// The same two moments on the wall clock: how long requests overlapped.
    pub arrived: Instant,
    pub answered: Instant,
}

impl RequestRecord {
    /// A write that changes state: not a read, not a dry run, not a review (reviews only ask).
    pub fn is_mutation(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        ) && !self.dry_run
            && !self.is_review()
            && (200..300).contains(&self.code)
    }

    pub fn is_write_attempt(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        ) && !self.dry_run
            && !self.is_review()
    }

    /// A create of a review (access, rules, who-am-i): answered, never stored.
    fn is_review(&self) -> bool {
        self.resource.ends_with("reviews")
    }
}

/// What an injected fault does.
#[derive(Clone, Debug)]
pub enum FaultAction {
    /// Answer with this status code (and `Retry-After` for 429), doing nothing.
    Fail { code: u16, retry_after: Option<u64> },
    /// Delay the request, then serve it.
    Latency(Duration),
    /// Close the connection without doing anything.
    Drop,
    /// Do the request, then close the connection before answering.
    ApplyThenDrop,
    /// Do the request and log it, then hold the answer back this long: a client killed in
    /// the meantime never learns that its write was applied.
    ApplyThenStall(Duration),
}

/// Which requests a fault applies to, and how many times.
#[derive(Clone, Debug)]
pub struct FaultRule {
    pub verbs: Vec<String>,
    pub resource: Option<String>,
    pub name: Option<String>,
    /// Only requests whose User-Agent starts with this (e.g. `kubectl-capi`).
    pub agent: Option<String>,
    pub action: FaultAction,
    /// Apply to at most this many requests (`None`: unlimited).
    pub remaining: Option<u32>,
    /// Apply to this fraction of matching requests (1.0: all).
    pub probability: f64,
    /// Let this many matching requests pass untouched first.
    pub skip: u32,
    /// Only dry-run requests (`Some(true)`) or only real ones (`Some(false)`).
    pub dry_run: Option<bool>,
}

impl FaultRule {
    /// Requests answered with `code` (no `Retry-After`), doing nothing.
    pub fn fail(code: u16) -> Self {
        FaultRule::new(FaultAction::Fail {
            code,
            retry_after: None,
        })
    }

    pub fn new(action: FaultAction) -> Self {
        FaultRule {
            verbs: Vec::new(),
            resource: None,
            name: None,
            agent: None,
            action,
            remaining: None,
            probability: 1.0,
            skip: 0,
            dry_run: None,
        }
    }
    /// Only requests from clients whose User-Agent starts with `prefix`.
    pub fn agent(mut self, prefix: &str) -> Self {
        self.agent = Some(prefix.to_string());
        self
    }

    /// Only these verbs (`create`, `patch`, …); `"write"` means every mutating verb.
    pub fn verbs(mut self, verbs: &[&str]) -> Self {
        for v in verbs {
            if *v == "write" {
                self.verbs.extend(
                    ["create", "update", "patch", "delete", "deletecollection"].map(String::from),
                );
            } else {
                self.verbs.push(v.to_string());
            }
        }
        self
    }
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_string());
        self
    }
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }
    pub fn times(mut self, n: u32) -> Self {
        self.remaining = Some(n);
        self
    }
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = p;
        self
    }
    /// Only requests that persist (`false`) or only dry runs (`true`).
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = Some(dry_run);
        self
    }
    /// Lets the first `n` matching requests pass before the rule applies.
    pub fn skip(mut self, n: u32) -> Self {
        self.skip = n;
        self
    }

    fn matches(
        &self,
        verb: &str,
        dry_run: bool,
        resource: &str,
        name: Option<&str>,
        agent: &str,
    ) -> bool {
        if self.agent.as_deref().is_some_and(|a| !agent.starts_with(a))
            || self.dry_run.is_some_and(|d| d != dry_run)
        {
            return false;
        }
        (self.verbs.is_empty() || self.verbs.iter().any(|v| v == verb))
            && self.resource.as_deref().is_none_or(|r| r == resource)
            && self.name.as_deref().is_none_or(|n| Some(n) == name)
            && self.remaining != Some(0)
    }
}

pub struct Faults {
    rules: Vec<FaultRule>,
    rng: StdRng,
}

impl Faults {
    pub fn new(seed: u64) -> Self {
        Faults {
            rules: Vec::new(),
            rng: StdRng::seed_from_u64(seed),
        }
    }
    pub fn add(&mut self, rule: FaultRule) {
        self.rules.push(rule);
    }
    pub fn clear(&mut self) {
        self.rules.clear();
    }
    /// The actions that apply to this request (consuming their counts).
    pub fn take(
        &mut self,
        verb: &str,
        dry_run: bool,
        resource: &str,
        name: Option<&str>,
        agent: &str,
    ) -> Vec<FaultAction> {
        let mut actions = Vec::new();
        for rule in self.rules.iter_mut() {
            if !rule.matches(verb, dry_run, resource, name, agent) {
                continue;
            }
            if rule.skip > 0 {
                rule.skip -= 1;
                continue;
            }
            if rule.probability < 1.0 && !self.rng.random_bool(rule.probability.clamp(0.0, 1.0)) {
                continue;
            }
            if let Some(n) = rule.remaining.as_mut() {
                *n -= 1;
            }
            actions.push(rule.action.clone());
        }
        actions
    }
}

/// RBAC in miniature: the admin may do everything except what is denied; other users only what is granted.
#[derive(Default)]
pub struct Policy {
    denied: HashSet<(String, String)>,
    granted: BTreeMap<String, HashSet<(String, String, String)>>,
}

impl Policy {
    /// Denies `verb` on `resource` (plural) to everyone, the admin included.
    pub fn deny(&mut self, verb: &str, resource: &str) {
        self.denied.insert((verb.to_string(), resource.to_string()));
    }
    pub fn grant(&mut self, user: &str, verb: &str, group: &str, resource: &str) {
        self.granted.entry(user.to_string()).or_default().insert((
            verb.to_string(),
            group.to_string(),
            resource.to_string(),
        ));
    }
    pub fn clear(&mut self) {
        self.denied.clear();
        self.granted.clear();
    }

    /// What `subjects` may do, as `(verb, group, resource)` rules sorted for a stable answer (the
    /// admin: everything). Denials are not rules; a SelfSubjectRulesReview says so by answering
    /// `incomplete` when there are any.
    pub fn rules_for(
        &self,
        subjects: &[String],
        is_admin: bool,
    ) -> (Vec<(String, String, String)>, bool) {
        let incomplete = !self.denied.is_empty();
        if is_admin {
            return (vec![("*".into(), "*".into(), "*".into())], incomplete);
        }
        let mut rules: Vec<(String, String, String)> = subjects
            .iter()
            .filter_map(|s| self.granted.get(s))
            .flatten()
            .cloned()
            .collect();
        rules.sort();
        rules.dedup();
        (rules, incomplete)
    }
    /// `subjects` are the user name and `group:<name>` for each of its groups.
    pub fn allows(
        &self,
        subjects: &[String],
        is_admin: bool,
        verb: &str,
        group: &str,
        resource: &str,
    ) -> bool {
        let base = resource.split('/').next().unwrap_or(resource);
        if self.denied.contains(&(verb.to_string(), base.to_string()))
            || self
                .denied
                .contains(&(verb.to_string(), resource.to_string()))
        {
            return false;
        }
        if is_admin {
            return true;
        }
        subjects
            .iter()
            .filter_map(|s| self.granted.get(s))
            .any(|rules| {
                rules.iter().any(|(v, g, r)| {
                    (v == "*" || v == verb)
                        && (g == "*" || g == group)
                        && (r == "*" || r == base || r == resource)
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_fault_runs_out() {
        let mut faults = Faults::new(1);
        faults.add(
            FaultRule::new(FaultAction::Fail {
                code: 500,
                retry_after: None,
            })
            .verbs(&["create"])
            .times(2),
        );
        assert_eq!(faults.take("create", false, "clusters", None, "").len(), 1);
        assert_eq!(faults.take("get", false, "clusters", None, "").len(), 0);
        assert_eq!(faults.take("create", false, "clusters", None, "").len(), 1);
        assert_eq!(faults.take("create", false, "clusters", None, "").len(), 0);
    }

    #[test]
    fn skipped_and_dry_run_requests_do_not_use_up_a_rule() {
        let mut faults = Faults::new(1);
        faults.add(
            FaultRule::new(FaultAction::Drop)
                .verbs(&["write"])
                .dry_run(false)
                .skip(1)
                .times(1),
        );
        assert!(faults.take("create", true, "clusters", None, "").is_empty());
        assert!(faults.take("patch", false, "clusters", None, "").is_empty());
        assert!(faults.take("get", false, "clusters", None, "").is_empty());
        assert_eq!(faults.take("delete", false, "clusters", None, "").len(), 1);
        assert!(
            faults
                .take("delete", false, "clusters", None, "")
                .is_empty()
        );
    }

    #[test]
    fn policy_denies_admin_and_grants_users() {
        let mut policy = Policy::default();
        policy.deny("delete", "clusters");
        let admin = ["admin".to_string()];
        let nobody = ["nobody".to_string(), "group:ops".to_string()];
        assert!(!policy.allows(&admin, true, "delete", "cluster.x-k8s.io", "clusters"));
        assert!(policy.allows(&admin, true, "get", "cluster.x-k8s.io", "clusters"));
        assert!(!policy.allows(&nobody, false, "get", "cluster.x-k8s.io", "clusters"));
        policy.grant("nobody", "get", "*", "clusters");
        assert!(policy.allows(&nobody, false, "get", "cluster.x-k8s.io", "clusters"));
        policy.grant("group:ops", "list", "*", "*");
        assert!(policy.allows(&nobody, false, "list", "", "secrets"));
    }
}
