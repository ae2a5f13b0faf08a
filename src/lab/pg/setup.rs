//! What a run at a client count is given, decided once for a hunt (or a
//! comparison, or a judgement) before any lab opens: the server's
//! settings with `max_connections` for those clients, and where the
//! server and pgbench run on this machine. The lab, the report and the
//! notes only read it.
//!
//! A host of a hunt over several hosts places its runs from its own CPUs
//! ([`super::host`]): its machine is not this one.

use crate::placement::{Placement, Policy};
use crate::server;
use serde::{Deserialize, Serialize};

/// A run's setup at one client count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSetup {
    pub clients: u32,
    /// The profile's server settings, `max_connections` raised for the
    /// clients when it was lower.
    pub settings: Vec<(String, String)>,
    /// The `max_connections` the server will have.
    pub max_connections: u32,
    /// Said when `max_connections` was raised.
    pub raised: Option<String>,
    /// Where the server and pgbench run, or why this machine cannot place
    /// them as the profile asks.
    pub placement: Result<Placement, String>,
}

/// The setups of every client count a plan runs at, and this machine's
/// CPUs the placement was decided over.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Setups {
    pub runs: Vec<RunSetup>,
    /// CPUs the placement could use.
    pub cpus: usize,
}

impl Setups {
    /// Decides the setup at each of `clients` (repeats once) from the
    /// profile's server settings and placement `policy`.
    pub fn decide(settings: &[(String, String)], policy: &Policy, clients: &[u32]) -> Setups {
        let mut runs: Vec<RunSetup> = Vec::new();
        for &n in clients {
            if runs.iter().any(|r| r.clients == n) {
                continue;
            }
            let (settings, max_connections, raised) = server::for_workload(settings, n);
            runs.push(RunSetup {
                clients: n,
                settings,
                max_connections,
                raised,
                placement: policy.decide(n).map_err(|e| e.to_string()),
            });
        }
        Setups {
            runs,
            cpus: policy.topology.cpus.len(),
        }
    }

    /// The setup at `clients`; an error when the plan did not decide one.
    pub fn at(&self, clients: u32) -> anyhow::Result<&RunSetup> {
        self.runs
            .iter()
            .find(|r| r.clients == clients)
            .ok_or_else(|| anyhow::anyhow!("no setup was decided for a run at {clients} clients"))
    }
}

impl RunSetup {
    /// `settings` (a commit's form of the profile's) with this setup's
    /// `max_connections`.
    pub fn applied_to(&self, settings: &[(String, String)]) -> Vec<(String, String)> {
        server::with_max_connections(settings, self.max_connections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{PlacementSpec, Topology};

    fn s(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_client_count_is_decided_once_and_read_back() {
        let policy = Policy {
            spec: PlacementSpec::default(),
            topology: Topology::current(),
        };
        let setups = Setups::decide(&s(&[("fsync", "off")]), &policy, &[128, 1, 128]);
        assert_eq!(setups.runs.len(), 2);
        let at = setups.at(128).unwrap();
        assert_eq!(at.max_connections, 138);
        assert_eq!(
            at.settings,
            s(&[("fsync", "off"), ("max_connections", "138")])
        );
        assert!(at.raised.is_some());
        assert_eq!(setups.at(1).unwrap().max_connections, 100);
        assert!(setups.at(7).is_err());
        // A commit's form of the settings gets the same number.
        let older = s(&[("checkpoint_segments", "64")]);
        assert_eq!(
            at.applied_to(&older),
            s(&[("checkpoint_segments", "64"), ("max_connections", "138")])
        );
    }
}
