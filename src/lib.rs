//! pgbisect: hunts PostgreSQL performance regressions.
//!
//! The crate is layered so that the parts that decide (the search and the
//! statistics) are pure and tested without processes, while every process
//! boundary (git, the build, the server, pgbench) sits behind a trait.
//! Dependencies run one way, from the top of this table down; a test
//! (`tests/integration/layers.rs`) reads the `use` lines and fails on an import from a
//! floor above, and on two modules or two files (also of one folder) that
//! import each other.
//!
//! | floor | modules | own |
//! |-------|---------|-----|
//! | commands | `commands` | flags, dispatch, one file per subcommand |
//! | engine | `engine` | loops over a lab: hunt, compare, judge, simulate, a release against where it left master; `session`: the entry points commands call |
//! | workspace | `workspace` | the work dir: paths, lock, a hunt's plan key (from the hunt's settings, `core::hunt_config`) |
//! | labs | `lab` (`pg`, `command`, `replay`, `pool`, `sim`: the simulated labs, `open`: the lab a `LabSpec` names, `held`: the hosts taken), `build`, `server`, `bench`, `hosts` | turning commits into measurements, here or on other hosts |
//! | services | `repo`, `profile`, `journal`, `store`, `report`, `notify`, `progress`, `machine`, `placement`, `perf`, `counts` | git, workloads, results on disk, the watcher's database, renderers, telling people, where the server and pgbench run, CPU profiles, instruction counts |
//! | core | `core` (`stats`, `decide`, `bisect`, `hunt_config`), `model`, `error`, `time`, `files`, `folders`, `profile_files`, `capture`, `proc`, `shown`, `spelling`, `strays` | pure decisions, the shared vocabulary, safe writes and the folders they go in, files a profile names read safely, commands' output and leftovers, others' text made safe to show, names close to a mistyped one |
//!
//! The `Lab` trait itself (`lab/mod.rs`) belongs to the core's floor: the
//! engine depends on the seam, never on a lab implementation.

pub mod bench;
pub mod build;
pub mod capture;
pub mod commands;
pub mod core;
pub mod counts;
pub mod engine;
pub mod error;
pub mod files;
pub mod folders;
pub mod hosts;
pub mod journal;
pub mod lab;
pub mod machine;
pub mod model;
pub mod notify;
pub mod perf;
pub mod placement;
pub mod proc;
pub mod profile;
pub mod profile_files;
pub mod progress;
pub mod repo;
pub mod report;
pub mod server;
pub mod shown;
pub mod spelling;
pub mod store;
pub mod strays;
#[cfg(test)]
mod testing;
pub mod time;
pub mod workspace;
