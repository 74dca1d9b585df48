//! The move plan: which nodes move, in which groups (longest path over owners and soft owners:
//! create ascending, delete descending), which are copied but kept, and which are excluded with
//! the reason clusterctl would leave unsaid.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::ObjectRef;
use crate::mover::graph::object_graph::{Graph, Node};

#[derive(Debug, Clone, Serialize)]
pub struct Excluded {
    pub object: ObjectRef,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct MovePlan {
    pub graph: Graph,
    /// UIDs per group; group 0 is created first and deleted last.
    pub groups: Vec<Vec<String>>,
    /// Every UID in `groups`, for membership tests.
    pub scheduled: BTreeSet<String>,
    /// Moved nodes that stay in the source too (shared with what does not move, or global).
    pub kept_in_source: BTreeSet<String>,
    pub excluded: Vec<Excluded>,
}

fn is_cluster(node: &Node) -> bool {
    node.reference.is_core_cluster()
}

/// Which Clusters move: the selected ones, and those that stay (a move of named Clusters).
struct Choice {
    selected: BTreeSet<String>,
    unselected: BTreeSet<String>,
}

impl Choice {
    fn of(graph: &Graph, selected: &BTreeSet<String>) -> Choice {
        let all_clusters: BTreeSet<String> = graph
            .nodes
            .values()
            .filter(|n| is_cluster(n) && !n.is_virtual())
            .map(|n| n.uid.clone())
            .collect();
        let selected: BTreeSet<String> = if selected.is_empty() {
            all_clusters.clone()
        } else {
            selected.clone()
        };
        let unselected = all_clusters.difference(&selected).cloned().collect();
        Choice {
            selected,
            unselected,
        }
    }

    /// Only some Clusters move.
    fn partial(&self) -> bool {
        !self.unselected.is_empty()
    }
}

/// A node's owners and soft owners: what must exist before it.
fn edges(node: &Node) -> Vec<String> {
    node.owners
        .iter()
        .map(|o| o.uid.clone())
        .chain(node.soft_owners.iter().cloned())
        .collect()
}

/// Plans the move of every Cluster in the graph (`selected` empty) or only the selected ones
/// (their UIDs): what is in scope, what is shared with what stays, the groups, what cannot move
/// and why, and what is copied but kept in the source.
pub fn plan(graph: Graph, selected: &BTreeSet<String>) -> MovePlan {
    let choice = Choice::of(&graph, selected);
    let scope = scope(&graph, &choice);
    let shared = shared(&graph, &choice, &scope);
    let (groups, scheduled) = groups(&graph, &choice, &scope);
    let excluded = excluded(&graph, &choice, &scope, &scheduled);
    // Kept in the source: global and should-not-delete objects, and anything shared.
    let kept_in_source = scheduled
        .iter()
        .filter(|uid| !graph.nodes[*uid].deleted_from_source() || shared.contains(*uid))
        .cloned()
        .collect();
    MovePlan {
        graph,
        groups,
        scheduled,
        kept_in_source,
        excluded,
    }
}

/// In scope: what the move takes.
fn scope(graph: &Graph, choice: &Choice) -> BTreeSet<String> {
    let (selected, unselected, partial) = (&choice.selected, &choice.unselected, choice.partial());
    // In scope: a whole move takes every node clusterctl would. A move of named Clusters takes
    // their tenants and forced objects, the owners they need, and those owners' hierarchies (a
    // ClusterClass's templates, a ClusterResourceSet's resources) — never what belongs to a
    // Cluster that stays.
    let mut scope: BTreeSet<String> = graph
        .nodes
        .values()
        .filter(|n| {
            n.moves()
                && (!partial
                    || n.tenants.iter().any(|t| selected.contains(t))
                    || (n.tenants.is_empty() && n.force_move))
        })
        .map(|n| n.uid.clone())
        .collect();
    loop {
        let mut added = Vec::new();
        for uid in &scope {
            for owner in edges(&graph.nodes[uid]) {
                // A Cluster that stays, and whatever belongs to it, is never pulled in because
                // it co-owns a moving object: that object is copied without the reference.
                let stays = |n: &Node| {
                    unselected.contains(&n.uid) || n.tenants.iter().any(|t| unselected.contains(t))
                };
                if scope.contains(&owner)
                    || !graph
                        .nodes
                        .get(&owner)
                        .is_some_and(|n| n.moves() && !stays(n))
                {
                    continue;
                }
                added.push(owner.clone());
                for other in graph.nodes.values() {
                    if other.moves()
                        && other.tenants.contains(&owner)
                        && !other.tenants.iter().any(|t| unselected.contains(t))
                    {
                        added.push(other.uid.clone());
                    }
                }
            }
        }
        added.retain(|u| !scope.contains(u));
        if added.is_empty() {
            break;
        }
        scope.extend(added);
    }
    scope
}

/// Shared: what moves but must stay in the source too.
fn shared(graph: &Graph, choice: &Choice, scope: &BTreeSet<String>) -> BTreeSet<String> {
    let (selected, unselected, partial) = (&choice.selected, &choice.unselected, choice.partial());
    // Shared: an ancestor of a moving node outside the scope (or, for named Clusters, a forced
    // object that belongs to no Cluster) is copied but stays in the source.
    let mut shared: BTreeSet<String> = BTreeSet::new();
    let mut queue: Vec<String> = graph
        .nodes
        .values()
        .filter(|n| n.moves() && !scope.contains(&n.uid))
        .map(|n| n.uid.clone())
        .collect();
    while let Some(uid) = queue.pop() {
        for owner in graph.nodes.get(&uid).map(edges).unwrap_or_default() {
            if shared.insert(owner.clone()) {
                queue.push(owner);
            }
        }
    }
    if partial {
        shared.extend(
            graph
                .nodes
                .values()
                .filter(|n| n.tenants.is_empty() && n.force_move)
                .map(|n| n.uid.clone()),
        );
    }
    // What a shared root holds for everyone (a class's templates, a set's resources) stays too,
    // unless it belongs to a moving Cluster (its binding of a set, say).
    let held: Vec<String> = scope
        .iter()
        .filter(|uid| {
            let node = &graph.nodes[*uid];
            !node.tenants.is_empty()
                && node.tenants.iter().all(|t| shared.contains(t))
                && !node.tenants.iter().any(|t| selected.contains(t))
        })
        .cloned()
        .collect();
    shared.extend(held);
    // And anything a staying Cluster co-owns (a template two Clusters share).
    shared.extend(
        scope
            .iter()
            .filter(|uid| {
                graph.nodes[*uid]
                    .tenants
                    .iter()
                    .any(|t| unselected.contains(t))
            })
            .cloned(),
    );

    shared
}

/// The groups, by longest path over owners and soft owners, and every UID they hold.
fn groups(
    graph: &Graph,
    choice: &Choice,
    scope: &BTreeSet<String>,
) -> (Vec<Vec<String>>, BTreeSet<String>) {
    let unselected = &choice.unselected;
    // Groups by longest path: a node goes once all its owners and soft owners went before
    // (owners that stay with an unselected Cluster do not hold it back).
    let staying: BTreeSet<String> = graph
        .nodes
        .values()
        .filter(|n| {
            !scope.contains(&n.uid)
                && (unselected.contains(&n.uid) || n.tenants.iter().any(|t| unselected.contains(t)))
        })
        .map(|n| n.uid.clone())
        .collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut scheduled: BTreeSet<String> = BTreeSet::new();
    loop {
        let group: Vec<String> = scope
            .iter()
            .filter(|uid| !scheduled.contains(*uid))
            .filter(|uid| {
                let node = &graph.nodes[*uid];
                node.owners
                    .iter()
                    .map(|o| &o.uid)
                    .chain(node.soft_owners.iter())
                    .all(|o| scheduled.contains(o) || staying.contains(o))
            })
            .cloned()
            .collect();
        if group.is_empty() {
            break;
        }
        scheduled.extend(group.iter().cloned());
        groups.push(group);
    }

    (groups, scheduled)
}

/// What is listed but does not move, with the reason clusterctl would leave unsaid.
fn excluded(
    graph: &Graph,
    choice: &Choice,
    scope: &BTreeSet<String>,
    scheduled: &BTreeSet<String>,
) -> Vec<Excluded> {
    let (selected, unselected) = (&choice.selected, &choice.unselected);
    // What the Clusters of either side use (a ClusterClass, say): their owners, soft ones
    // included. Used only by Clusters that stay, an object stays with them, unremarked.
    let used_by = |clusters: &BTreeSet<String>| -> BTreeSet<&str> {
        clusters
            .iter()
            .filter_map(|uid| graph.nodes.get(uid))
            .flat_map(|c| {
                c.owners
                    .iter()
                    .map(|o| o.uid.as_str())
                    .chain(c.soft_owners.iter().map(String::as_str))
            })
            .collect()
    };
    let (used_by_selected, used_by_unselected) = (used_by(selected), used_by(unselected));
    let mut excluded = Vec::new();
    for node in graph.nodes.values().filter(|n| !n.is_virtual()) {
        if scope.contains(&node.uid) && scheduled.contains(&node.uid) {
            continue;
        }
        let uid = node.uid.as_str();
        let belongs_elsewhere = (node.tenants.iter().any(|t| unselected.contains(t))
            && !node.tenants.iter().any(|t| selected.contains(t)))
            || (used_by_unselected.contains(uid) && !used_by_selected.contains(uid));
        if belongs_elsewhere {
            continue;
        }
        let reason = if scope.contains(&node.uid) {
            let missing = node
                .owners
                .iter()
                .map(|o| &o.uid)
                .chain(node.soft_owners.iter())
                .find(|o| !scheduled.contains(*o));
            match missing.and_then(|o| graph.nodes.get(o)) {
                Some(owner) if owner.is_virtual() => {
                    format!(
                        "its owner {} {} (uid {}) does not exist",
                        owner.reference.kind, owner.reference.name, owner.uid
                    )
                }
                Some(owner) => format!(
                    "its owner {} {} is not part of the move",
                    owner.reference.kind, owner.reference.name
                ),
                None => "it is part of an ownership cycle".to_string(),
            }
        } else {
            format!(
                "it is not linked to any Cluster (no owner reference, no {} label)",
                crate::names::MOVE_LABEL
            )
        };
        excluded.push(Excluded {
            object: node.reference.clone(),
            reason,
        });
    }

    excluded
}

impl MovePlan {
    /// The plan group of each object, by source UID.
    pub fn group_by_uid(&self) -> std::collections::HashMap<&str, usize> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(index, group)| group.iter().map(move |uid| (uid.as_str(), index)))
            .collect()
    }

    /// Drops the listed objects' contents; the plan keeps its structure. A move re-reads every
    /// object after pausing, and holding both copies would double its memory.
    pub fn release_objects(&mut self) {
        for node in self.graph.nodes.values_mut() {
            node.object = None;
            node.content = None;
        }
    }

    pub fn node(&self, uid: &str) -> &Node {
        &self.graph.nodes[uid]
    }

    /// What the same move, planned again over `objects` (read once the source is paused),
    /// would hold that this plan does not: objects a controller wrote after the plan, before it
    /// saw the pause. A move that went on without them would leave them behind.
    pub fn appeared(
        &self,
        objects: &crate::mover::graph::object_graph::TypedObjects,
        namespace: Option<&str>,
    ) -> Vec<ObjectRef> {
        let selected: BTreeSet<String> = self
            .scheduled
            .iter()
            .filter(|uid| self.node(uid).reference.is_core_cluster())
            .cloned()
            .collect();
        let again = plan(Graph::build(objects, namespace), &selected);
        let mut appeared: Vec<ObjectRef> = again
            .scheduled
            .iter()
            .filter(|uid| !self.scheduled.contains(*uid))
            .map(|uid| again.node(uid).reference.clone())
            .collect();
        appeared.sort_by_key(ObjectRef::kubectl_name);
        appeared
    }

    /// The Clusters and ClusterClasses a move pauses, in group order: every one planned, unless
    /// it was paused before (as read for the plan) — that one ends paused, as it began.
    pub fn to_pause(&self) -> Vec<ObjectRef> {
        self.groups
            .iter()
            .flatten()
            .map(|uid| self.node(uid))
            .filter(|n| crate::model::kinds::paused_by_move(n.reference.group(), &n.reference.kind))
            .filter(|n| {
                !n.object
                    .as_ref()
                    .is_some_and(|o| crate::model::kinds::paused_as_a_move_pauses(&n.reference, o))
            })
            .map(|n| n.reference.clone())
            .collect()
    }

    /// The moved objects as an ownership forest, for `-o wide`: Clusters are roots, every other
    /// object hangs under one owner (its controller, else its first owner, else its first soft
    /// owner) and appears once; objects with no moved owner (a shared ClusterClass, an identity)
    /// are roots after the Clusters.
    pub fn tree(&self) -> Vec<TreeNode> {
        let scheduled: BTreeSet<&String> = self.groups.iter().flatten().collect();
        let is_cluster = |uid: &str| {
            let r = &self.node(uid).reference;
            r.is_core_cluster()
        };
        let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut roots: Vec<&str> = Vec::new();
        for uid in &scheduled {
            let node = self.node(uid);
            let hard = node
                .owners
                .iter()
                .filter(|o| scheduled.contains(&o.uid))
                .min_by_key(|o| !o.controller)
                .map(|o| o.uid.as_str());
            let soft = node
                .soft_owners
                .iter()
                .find(|o| scheduled.contains(o))
                .map(String::as_str);
            match hard.or(soft) {
                Some(parent) if !is_cluster(uid) => children.entry(parent).or_default().push(uid),
                _ => roots.push(uid),
            }
        }
        let order = |uid: &&str| {
            let r = &self.node(uid).reference;
            (
                !is_cluster(uid),
                r.namespace.clone(),
                r.kind.clone(),
                r.name.clone(),
            )
        };
        roots.sort_by_key(order);
        for list in children.values_mut() {
            list.sort_by_key(order);
        }
        let mut placed: BTreeSet<&str> = BTreeSet::new();
        let mut forest: Vec<TreeNode> = roots
            .iter()
            .map(|uid| self.subtree(uid, &children, &mut placed))
            .collect();
        // Owner cycles leave objects unreachable from any root: show them at the top level.
        let mut unplaced: Vec<&str> = scheduled
            .iter()
            .map(|u| u.as_str())
            .filter(|u| !placed.contains(u))
            .collect();
        unplaced.sort_by_key(order);
        for uid in unplaced {
            if !placed.contains(uid) {
                forest.push(self.subtree(uid, &children, &mut placed));
            }
        }
        forest
    }

    fn subtree<'a>(
        &'a self,
        uid: &'a str,
        children: &BTreeMap<&'a str, Vec<&'a str>>,
        placed: &mut BTreeSet<&'a str>,
    ) -> TreeNode {
        placed.insert(uid);
        let mut node = TreeNode {
            object: self.node(uid).reference.clone(),
            kept_in_source: self.kept_in_source.contains(uid),
            children: Vec::new(),
        };
        for child in children.get(uid).into_iter().flatten() {
            if !placed.contains(child) {
                node.children.push(self.subtree(child, children, placed));
            }
        }
        node
    }
}

/// One object of the ownership forest and the objects it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    pub object: ObjectRef,
    pub kept_in_source: bool,
    pub children: Vec<TreeNode>,
}
