//! The integration tests: one binary, one module a file, so the crate and
//! the shared helpers in `common` are compiled and linked once.

mod common;

mod build;
mod cli_snapshots;
mod compare_cli;
mod counts;
mod hosts_cli;
mod hunt_cli;
mod judge_cli;
mod layers;
mod leftovers_cli;
mod notify_cli;
mod paths_flags_cli;
mod perf;
mod preflight_cli;
mod profile_files;
mod regressions_catalogue;
mod release_cli;
mod repo;
mod repo_functions;
mod report_cli;
mod report_golden;
mod scale;
mod server;
mod stop_cli;
mod store_postgres;
mod store_tls;
mod watch_cli;
mod watch_counts;
mod watch_hunt_report;
mod watch_links;
mod watch_mail;
mod watch_refusals;
mod watch_site;
mod watch_triage;
mod workload;
