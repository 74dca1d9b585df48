//! A fake cloud behind the infrastructure provider, shared by every management cluster (as a real
//! cloud is). Machines and load balancers are keyed by providerID; after a move the target's
//! controllers find what exists here and adopt it instead of provisioning again.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudMachine {
    pub namespace: String,
    pub cluster: String,
    /// The Machine (or pool instance) name it was created for.
    pub name: String,
    pub healthy: bool,
}

#[derive(Debug, Default)]
struct State {
    machines: BTreeMap<String, CloudMachine>,
    load_balancers: BTreeMap<String, String>,
    created: u64,
    deleted: u64,
    /// Which blind view created a machine (providerID → view).
    creators: BTreeMap<String, u64>,
    views: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Cloud {
    state: Arc<Mutex<State>>,
    /// `Some`: a provider that finds only the machines it created itself — one whose version or
    /// credentials do not match the cloud's, so after a move it cannot adopt what it finds.
    view: Option<u64>,
}

/// The providerID the fake provider gives a machine.
pub fn provider_id(namespace: &str, name: &str) -> String {
    format!("docker:////{namespace}-{name}")
}

/// The key of a cluster's load balancer.
pub fn load_balancer_key(namespace: &str, cluster: &str) -> String {
    format!("{namespace}/{cluster}")
}

impl Cloud {
    pub fn new() -> Cloud {
        Cloud::default()
    }

    /// The same cloud as a provider that cannot adopt sees it: only the machines it creates
    /// through this view exist for it (what a move brings along is not found).
    pub fn unable_to_adopt(&self) -> Cloud {
        let mut state = self.state.lock();
        state.views += 1;
        Cloud {
            state: self.state.clone(),
            view: Some(state.views),
        }
    }

    /// Whether this view cannot adopt machines it did not create.
    pub fn cannot_adopt(&self) -> bool {
        self.view.is_some()
    }

    fn visible(&self, state: &State, provider_id: &str) -> bool {
        self.view
            .is_none_or(|view| state.creators.get(provider_id) == Some(&view))
    }

    pub fn create_machine(&self, provider_id: &str, machine: CloudMachine) {
        let mut state = self.state.lock();
        if !state.machines.contains_key(provider_id) {
            state.created += 1;
            state.machines.insert(provider_id.to_string(), machine);
            if let Some(view) = self.view {
                state.creators.insert(provider_id.to_string(), view);
            }
        }
    }

    /// Deletes a machine this view can find (a blind view never deletes what it cannot see).
    pub fn delete_machine(&self, provider_id: &str) {
        let mut state = self.state.lock();
        if self.visible(&state, provider_id) && state.machines.remove(provider_id).is_some() {
            state.deleted += 1;
        }
    }

    pub fn machine(&self, provider_id: &str) -> Option<CloudMachine> {
        let state = self.state.lock();
        if !self.visible(&state, provider_id) {
            return None;
        }
        state.machines.get(provider_id).cloned()
    }

    /// Every machine: providerID → machine.
    pub fn machines(&self) -> BTreeMap<String, CloudMachine> {
        self.state.lock().machines.clone()
    }

    /// Machines ever created and deleted (a move must add neither).
    pub fn totals(&self) -> (u64, u64) {
        let state = self.state.lock();
        (state.created, state.deleted)
    }

    /// Marks the node of the machine created for `name` (unique per namespace) unhealthy or healthy.
    pub fn set_healthy(&self, namespace: &str, name: &str, healthy: bool) -> bool {
        let mut state = self.state.lock();
        match state
            .machines
            .values_mut()
            .find(|m| m.namespace == namespace && m.name == name)
        {
            Some(machine) => {
                machine.healthy = healthy;
                true
            }
            None => false,
        }
    }

    pub fn create_load_balancer(&self, key: &str) {
        self.state
            .lock()
            .load_balancers
            .insert(key.to_string(), format!("lb-{}", key.replace('/', "-")));
    }

    pub fn delete_load_balancer(&self, key: &str) {
        self.state.lock().load_balancers.remove(key);
    }

    pub fn load_balancer(&self, key: &str) -> Option<String> {
        self.state.lock().load_balancers.get(key).cloned()
    }

    pub fn load_balancers(&self) -> BTreeMap<String, String> {
        self.state.lock().load_balancers.clone()
    }
}
