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
}

#[derive(Debug, Clone, Default)]
pub struct Cloud {
    state: Arc<Mutex<State>>,
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

    pub fn create_machine(&self, provider_id: &str, machine: CloudMachine) {
        let mut state = self.state.lock();
        if !state.machines.contains_key(provider_id) {
            state.created += 1;
            state.machines.insert(provider_id.to_string(), machine);
        }
    }

    pub fn delete_machine(&self, provider_id: &str) {
        let mut state = self.state.lock();
        if state.machines.remove(provider_id).is_some() {
            state.deleted += 1;
        }
    }

    pub fn machine(&self, provider_id: &str) -> Option<CloudMachine> {
        self.state.lock().machines.get(provider_id).cloned()
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
