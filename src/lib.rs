//! pgbisect: hunts PostgreSQL performance regressions.
//!
//! The crate is split so that the parts that decide (the search and the
//! statistics) are pure and tested without processes, while every process
//! boundary (git, the build, the server, pgbench) sits behind a trait.
//!
//! | module    | owns |
//! |-----------|------|
//! | `cli`     | command-line definitions |
//! | `profile` | workload profiles (TOML) merged with flags |
//! | `repo`    | git: revisions, candidates, private work tree |
//! | `lab`     | the measuring boundary: build a commit, run the benchmark once |
//! | `command_lab` | a lab driven by shell commands from a profile |
//! | `pg_lab`  | the real PostgreSQL lab: build, server, pgbench |
//! | `build`   | PostgreSQL builds with an install cache |
//! | `server`  | private PostgreSQL servers and data templates |
//! | `bench`   | pgbench command lines and output parsing |
//! | `stats`   | samples, rank tests, confidence intervals |
//! | `decide`  | sequential decisions built on `stats` |
//! | `bisect`  | the search as a step/record state machine |
//! | `hunt`    | the driver loop that measures and journals |
//! | `journal` | results on disk after every run |
//! | `spent`   | what a hunt cost, across resumes |
//! | `findings`| what a hunt found, as data for every report |
//! | `progress`| telling the user what the hunt is doing |
//! | `notify`  | telling someone how a hunt ended: a command, mail |
//! | `simulate`| the engine against simulated histories |
//! | `report`  | renderers for results: text, markdown, email, JSON |
//! | `results` | past hunts' results in a work dir; `pgbisect report` |
//! | `machine` | the machine a hunt ran on, for reports |
//! | `chart`   | SVG charts of results |
//! | `compare` | two builds side by side across client counts |
//! | `judge`   | one commit against a hunt's endpoints, for `git bisect run` |

pub mod app;
pub mod bench;
pub mod bisect;
pub mod build;
pub mod chart;
pub mod cli;
pub mod command_lab;
pub mod compare;
pub mod decide;
pub mod findings;
pub mod hunt;
pub mod journal;
pub mod judge;
pub mod lab;
pub mod machine;
pub mod notify;
pub mod pg_lab;
pub mod profile;
pub mod progress;
pub mod replay;
pub mod repo;
pub mod report;
pub mod results;
pub mod resume;
pub mod server;
pub mod simulate;
pub mod spent;
pub mod stats;
#[cfg(test)]
mod testing;
pub mod workdir;
